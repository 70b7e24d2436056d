/**
 * Where a request wants to go: the host and port a client named (CONNECT's authority, an
 * absolute URI's authority, a SOCKS5 address), read one way for every protocol.
 *
 * A host is an IP address in canonical text, or a DNS name. Anything else is refused, in
 * particular the numeric spellings a resolver would quietly turn into an address (`127.1`,
 * `0x7f.1`, `2130706433`, `0177.0.0.1`: inet_aton accepts them all): the rule is the URL
 * standard's "ends in a number", so a name is never an address in disguise.
 */
import { IPV4_MAPPED, low32, parseIpv4, parseIpv6, rangeContains, type Ip } from "./ip.ts";

/** A DNS name as written in requests and allow entries: ASCII labels of letters, digits, `-` and `_`. */
const LABEL = /^[a-z0-9_-]{1,63}$/;
const MAX_NAME = 253;

export type Host = { kind: "name"; name: string } | { kind: "ip"; ip: Ip };

export interface Target {
  host: Host;
  port: number;
}

/**
 * A DNS name lower-cased and without its one trailing dot (`Example.COM.` is `example.com`);
 * null when it is not a name (empty label, a character outside the label set, too long, or
 * ending in a number). International names are compared as written: in punycode (`xn--…`).
 */
export function normaliseName(text: string): string | null {
  const lower = text.toLowerCase();
  const name = lower.endsWith(".") ? lower.slice(0, -1) : lower;
  if (name.length === 0 || name.length > MAX_NAME) return null;
  const labels = name.split(".");
  if (!labels.every((label) => LABEL.test(label))) return null;
  return endsInNumber(labels) ? null : name;
}

/** The URL standard's test: a last label of digits or `0x` hex is read as an IPv4 number by resolvers and browsers. */
export function endsInNumber(labels: readonly string[]): boolean {
  const last = labels.at(-1)!;
  return /^[0-9]+$/.test(last) || /^0x[0-9a-f]*$/i.test(last);
}

/** An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is the IPv4 address itself for the kernel: read it as that. */
export function unmapped(ip: Ip): Ip {
  return rangeContains(IPV4_MAPPED(), ip) ? low32(ip) : ip;
}

/** A host as a request names it: `[v6]` (brackets required by the caller's grammar or not), IPv4, or a name. */
export function parseHost(text: string, bracketed: boolean): Host | null {
  if (bracketed || text.includes(":")) {
    const ip = parseIpv6(text);
    return ip ? { kind: "ip", ip: unmapped(ip) } : null;
  }
  const ipv4 = parseIpv4(text);
  if (ipv4) return { kind: "ip", ip: ipv4 };
  const name = normaliseName(text);
  return name ? { kind: "name", name } : null;
}

/** A decimal port 1–65535 without a leading zero. */
export function parsePort(text: string): number | null {
  return /^[1-9][0-9]{0,4}$/.test(text) && Number(text) <= 65535 ? Number(text) : null;
}

/** `host:port`, `[v6]:port`, or without `:port` when `defaultPort` is given; null when malformed. */
export function parseAuthority(text: string, defaultPort: number | null): Target | null {
  let hostText: string;
  let portText: string | null;
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0) return null;
    hostText = text.slice(1, close);
    const rest = text.slice(close + 1);
    if (rest !== "" && !rest.startsWith(":")) return null;
    portText = rest === "" ? null : rest.slice(1);
  } else {
    const colon = text.lastIndexOf(":");
    if (text.indexOf(":") !== colon) return null; // a bare IPv6 address needs its brackets here
    hostText = colon < 0 ? text : text.slice(0, colon);
    portText = colon < 0 ? null : text.slice(colon + 1);
  }
  const host = parseHost(hostText, text.startsWith("["));
  const port = portText === null ? defaultPort : parsePort(portText);
  return host && port !== null ? { host, port } : null;
}
