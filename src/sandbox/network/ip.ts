/**
 * IP addresses and ranges as numbers: one strict parser for every place an address is read
 * (an allow entry, a request's host, a resolver's answer), so no two places disagree about
 * what "127.0.0.1" is. Only the canonical spellings are addresses: four decimal numbers
 * without leading zeros, or RFC 4291 IPv6 text. `127.1`, `0x7f.0.0.1`, `2130706433`,
 * `0177.0.0.1` and zone ids (`fe80::1%eth0`) are not: a caller decides what such a spelling
 * means (request hosts refuse them, see target.ts).
 */
import { once } from "../../platform/lazy.ts";

export interface Ip {
  family: 4 | 6;
  /** The address as a 32- or 128-bit number. */
  value: bigint;
}

/** An address and a prefix length: `10.0.0.0/8`; a single address is a /32 or /128. */
export interface IpRange {
  family: 4 | 6;
  /** The first address of the range (host bits zero). */
  network: bigint;
  prefix: number;
}

const OCTET = /^(0|[1-9][0-9]{0,2})$/;
const HEXTET = /^[0-9a-fA-F]{1,4}$/;

/** How many bits an address of `family` has. */
export function bitsOf(family: 4 | 6): number {
  return family === 4 ? 32 : 128;
}

/** Four decimal octets, each 0–255 without a leading zero; null for anything else. */
export function parseIpv4(text: string): Ip | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((part) => OCTET.test(part) && Number(part) <= 255)) return null;
  return { family: 4, value: parts.reduce((value, part) => (value << 8n) | BigInt(part), 0n) };
}

/** RFC 4291 text (`::` once at most, an optional dotted IPv4 tail); no zone id, no brackets. */
export function parseIpv6(text: string): Ip | null {
  const colon = text.lastIndexOf(":");
  const tail = text.slice(colon + 1);
  if (tail.includes(".")) {
    // A dotted IPv4 tail stands for the last two groups: rewrite it as hex, then parse hex only.
    const ipv4 = parseIpv4(tail);
    if (!ipv4 || colon < 0) return null;
    text = `${text.slice(0, colon + 1)}${(ipv4.value >> 16n).toString(16)}:${(ipv4.value & 0xffffn).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const [head, rest] = halves.map((half) => (half === "" ? [] : half.split(":")));
  const groups = [...head!, ...(rest ?? [])];
  if (!groups.every((group) => HEXTET.test(group))) return null;
  if (rest === undefined ? groups.length !== 8 : groups.length > 7) return null;
  const zeros = Array<string>(8 - groups.length).fill("0");
  const all = [...head!, ...zeros, ...(rest ?? [])];
  return { family: 6, value: all.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n) };
}

/** An IPv4 or IPv6 address in canonical text; null for anything else. */
export function parseIp(text: string): Ip | null {
  return text.includes(":") ? parseIpv6(text) : parseIpv4(text);
}

/** `a.b.c.d` or RFC 5952 text (lower case, the longest run of zero groups as `::`). */
export function formatIp(ip: Ip): string {
  if (ip.family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((ip.value >> shift) & 0xffn)).join(".");
  const groups = Array.from({ length: 8 }, (_, i) => Number((ip.value >> BigInt(16 * (7 - i))) & 0xffffn));
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length && j - i > 1) best = { start: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (best.start < 0) return hex.join(":");
  return `${hex.slice(0, best.start).join(":")}::${hex.slice(best.start + best.length).join(":")}`;
}

/** `address/prefix` with the host bits zero, or a lone address (a /32 or /128); null otherwise. */
export function parseRange(text: string): IpRange | null {
  const slash = text.indexOf("/");
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return null;
  const bits = bitsOf(ip.family);
  if (slash < 0) return { family: ip.family, network: ip.value, prefix: bits };
  const prefixText = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText) || Number(prefixText) > bits) return null;
  const range = { family: ip.family, network: ip.value, prefix: Number(prefixText) };
  // Host bits set (10.0.0.1/8) is most likely a typo for something narrower: refuse, do not round.
  return hostBits(range) & ip.value ? null : range;
}

function hostBits(range: IpRange): bigint {
  return (1n << BigInt(bitsOf(range.family) - range.prefix)) - 1n;
}

export function rangeContains(range: IpRange, ip: Ip): boolean {
  return range.family === ip.family && (ip.value & ~hostBits(range)) === range.network;
}

/** Whether every address of `inner` is in `outer`. */
export function rangeWithin(inner: IpRange, outer: IpRange): boolean {
  return inner.family === outer.family && inner.prefix >= outer.prefix && rangeContains(outer, { family: inner.family, value: inner.network });
}

/** The IPv4 address held in the low 32 bits of an IPv6 one. */
export function low32(ip: Ip): Ip {
  return { family: 4, value: ip.value & 0xffff_ffffn };
}

/**
 * `::ffff:0:0/96`, the IPv4-mapped IPv6 addresses: the kernel reads one as the IPv4 address in
 * its low 32 bits. Parsed at first use: parsing it when the module is evaluated cost every
 * inspect and exec ~0.4 ms (settings.ts loads this module).
 */
export const IPV4_MAPPED = once(() => parseRange("::ffff:0:0/96")!);
