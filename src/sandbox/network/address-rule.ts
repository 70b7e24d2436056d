/**
 * The address rule: before the proxy connects anywhere, every address it would connect to is
 * checked here. Addresses that reach this machine, the local network or the cloud's metadata
 * service (loopback, link-local, private, shared, unique-local, multicast, unspecified,
 * broadcast, reserved) are refused, whatever name led to them, unless an allow entry names the
 * address or a range that lies wholly inside the refused range (`169.254.169.254`,
 * `10.0.0.0/8`). A wide entry that merely contains it (`0.0.0.0/0`, `::/0`) does not count:
 * naming the whole Internet is not naming the metadata endpoint.
 *
 * IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
 * `2002::/16`) are judged by the IPv4 address they carry; an entry exempts one only when it
 * lies inside the same range written in that form.
 */
import { IPV4_MAPPED, low32, parseRange, rangeContains, rangeWithin, type Ip, type IpRange } from "./ip.ts";

interface RefusedRange {
  range: IpRange;
  /** Said in the refusal: what reaching this range would reach. */
  what: string;
}

function ranges(list: [string, string][]): RefusedRange[] {
  return list.map(([text, what]) => ({ range: parseRange(text)!, what }));
}

/** First match names the refusal: broadcast before the reserved /4 that holds it. */
const IPV4: RefusedRange[] = ranges([
  ["0.0.0.0/8", "this network (0.0.0.0/8)"],
  ["10.0.0.0/8", "a private network (10.0.0.0/8)"],
  ["100.64.0.0/10", "shared address space (100.64.0.0/10, carrier-grade NAT)"],
  ["127.0.0.0/8", "loopback (127.0.0.0/8)"],
  ["169.254.0.0/16", "link-local (169.254.0.0/16, the cloud metadata endpoint)"],
  ["172.16.0.0/12", "a private network (172.16.0.0/12)"],
  ["192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)"],
  ["192.0.2.0/24", "documentation (192.0.2.0/24)"],
  ["192.88.99.0/24", "the 6to4 relay anycast (192.88.99.0/24)"],
  ["192.168.0.0/16", "a private network (192.168.0.0/16)"],
  ["198.18.0.0/15", "benchmarking (198.18.0.0/15)"],
  ["198.51.100.0/24", "documentation (198.51.100.0/24)"],
  ["203.0.113.0/24", "documentation (203.0.113.0/24)"],
  ["224.0.0.0/4", "multicast (224.0.0.0/4)"],
  ["255.255.255.255/32", "broadcast (255.255.255.255)"],
  ["240.0.0.0/4", "reserved (240.0.0.0/4)"],
]);

/** IPv6 ranges that carry an IPv4 address, and where: the IPv4 address is judged instead. */
const EMBEDDINGS: { range: IpRange; shift: bigint; form: string }[] = [
  { range: IPV4_MAPPED(), shift: 0n, form: "IPv4-mapped" },
  { range: parseRange("64:ff9b::/96")!, shift: 0n, form: "NAT64" },
  { range: parseRange("2002::/16")!, shift: 80n, form: "6to4" },
];

const IPV6: RefusedRange[] = ranges([
  ["::/128", "the unspecified address (::)"],
  ["::1/128", "loopback (::1)"],
  ["::/96", "an IPv4-compatible address (::/96, deprecated)"],
  ["64:ff9b:1::/48", "local-use NAT64 (64:ff9b:1::/48)"],
  ["100::/64", "discard-only (100::/64)"],
  ["2001::/32", "Teredo (2001::/32), which tunnels to an address it hides"],
  ["2001:db8::/32", "documentation (2001:db8::/32)"],
  ["fc00::/7", "unique-local (fc00::/7)"],
  ["fec0::/10", "site-local (fec0::/10, deprecated)"],
  ["fe80::/10", "link-local (fe80::/10)"],
  ["ff00::/8", "multicast (ff00::/8)"],
  // Everything outside global unicast 2000::/3 is reserved or one of the above.
  ["::/3", "reserved (outside 2000::/3)"],
  ["4000::/2", "reserved (outside 2000::/3)"],
  ["8000::/1", "reserved (outside 2000::/3)"],
]);

/** The refused range holding `ip` (for an embedding: the IPv4 range written in IPv6), or null for a public address. */
export function refusedRangeOf(ip: Ip): RefusedRange | null {
  if (ip.family === 4) return IPV4.find(({ range }) => rangeContains(range, ip)) ?? null;
  for (const { range, shift, form } of EMBEDDINGS) {
    if (!rangeContains(range, ip)) continue;
    const carried = refusedRangeOf(low32({ family: 6, value: ip.value >> shift }));
    if (!carried) return null;
    const network = range.network | (carried.range.network << shift);
    return { range: { family: 6, network, prefix: range.prefix + carried.range.prefix }, what: `${carried.what} in ${form} form` };
  }
  return IPV6.find(({ range }) => rangeContains(range, ip)) ?? null;
}

/**
 * Why `ip` may not be connected to, or null when it may. `allowing` are the ranges of the
 * entries that allow this address on this port (Allowlist.rangesAllowing).
 */
export function addressRefusal(ip: Ip, allowing: readonly IpRange[]): string | null {
  const refused = refusedRangeOf(ip);
  if (!refused) return null;
  if (allowing.some((entry) => rangeWithin(entry, refused.range))) return null;
  return `${refused.what} is not reachable unless an allow entry names it`;
}
