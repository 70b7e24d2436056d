/**
 * The address rule, exhaustively: every address that reaches this machine, its network or the
 * cloud metadata service is refused in every spelling it can arrive in, unless an entry names it.
 */
import { describe, expect, test } from "bun:test";
import { addressRefusal, refusedRangeOf } from "../../src/sandbox/network/address-rule.ts";
import { compileAllowlist } from "../../src/sandbox/network/allowlist.ts";
import { parseIp, type Ip } from "../../src/sandbox/network/ip.ts";

function ip(text: string): Ip {
  const parsed = parseIp(text);
  if (!parsed) throw new Error(`not an address: ${text}`);
  return parsed;
}

/** The refusal under an allowlist of `entries`, for `address` on port 443. */
function refusal(address: string, entries: string[] = []): string | null {
  return addressRefusal(ip(address), compileAllowlist(entries).rangesAllowing(ip(address), 443));
}

// [address, what the refusal says]: the first and last address of each range, and the famous ones.
const REFUSED: [string, string][] = [
  ["0.0.0.0", "this network"],
  ["0.255.255.255", "this network"],
  ["10.0.0.0", "private"],
  ["10.255.255.255", "private"],
  ["100.64.0.0", "carrier-grade NAT"],
  ["100.127.255.255", "carrier-grade NAT"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["169.254.169.254", "cloud metadata"],
  ["169.254.0.1", "link-local"],
  ["172.16.0.0", "private"],
  ["172.31.255.255", "private"],
  ["192.0.0.8", "IETF protocol assignments"],
  ["192.0.2.1", "documentation"],
  ["192.88.99.1", "6to4 relay"],
  ["192.168.0.1", "private"],
  ["192.168.255.255", "private"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.255", "benchmarking"],
  ["198.51.100.7", "documentation"],
  ["203.0.113.9", "documentation"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.255", "broadcast"],
  ["::", "unspecified"],
  ["::1", "loopback (::1)"],
  ["::127.0.0.1", "IPv4-compatible"],
  ["::8.8.8.8", "IPv4-compatible"],
  ["::ffff:127.0.0.1", "loopback (127.0.0.0/8) in IPv4-mapped form"],
  ["::ffff:7f00:1", "loopback (127.0.0.0/8) in IPv4-mapped form"],
  ["::ffff:a9fe:a9fe", "cloud metadata endpoint) in IPv4-mapped form"],
  ["::ffff:10.1.2.3", "private network (10.0.0.0/8) in IPv4-mapped form"],
  ["::ffff:0:127.0.0.1", "reserved"],
  ["64:ff9b::127.0.0.1", "loopback (127.0.0.0/8) in NAT64 form"],
  ["64:ff9b::a9fe:a9fe", "cloud metadata endpoint) in NAT64 form"],
  ["64:ff9b::c0a8:1", "private network (192.168.0.0/16) in NAT64 form"],
  ["64:ff9b:1::8.8.8.8", "local-use NAT64"],
  ["2002:7f00:1::", "loopback (127.0.0.0/8) in 6to4 form"],
  ["2002:a9fe:a9fe::1", "cloud metadata endpoint) in 6to4 form"],
  ["2001::1", "Teredo"],
  ["2001:db8::1", "documentation"],
  ["100::1", "discard-only"],
  ["fc00::1", "unique-local"],
  ["fd12:3456::1", "unique-local"],
  ["fec0::1", "site-local"],
  ["fe80::1", "link-local (fe80::/10)"],
  ["febf:ffff::1", "link-local (fe80::/10)"],
  ["ff02::1", "multicast"],
  ["ff05::2", "multicast"],
  ["1::1", "reserved"],
  ["4000::1", "reserved"],
  ["e000::1", "reserved"],
];

describe("refused without an entry", () => {
  for (const [address, says] of REFUSED) {
    test(`${address}: ${says}`, () => {
      const reason = refusal(address);
      expect(reason).toContain(says);
      expect(reason).toContain("unless an allow entry names it");
    });
  }
});

describe("public addresses pass", () => {
  for (const address of ["8.8.8.8", "1.1.1.1", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255", "192.169.0.0", "223.255.255.255", "2606:4700::1111", "2a00:1450::1", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1"]) {
    test(address, () => expect(refusal(address)).toBeNull());
  }
});

describe("an entry exempts an address only by naming it or a range inside the refused one", () => {
  test("the address itself, on its port", () => {
    expect(refusal("127.0.0.1", ["127.0.0.1:443"])).toBeNull();
    expect(refusal("127.0.0.1", ["127.0.0.1:8080"])).not.toBeNull();
    expect(refusal("169.254.169.254", ["169.254.169.254"])).toBeNull();
    expect(refusal("::1", ["[::1]:443"])).toBeNull();
  });

  test("a range inside the refused range", () => {
    expect(refusal("10.1.2.3", ["10.0.0.0/8"])).toBeNull();
    expect(refusal("10.1.2.3", ["10.1.0.0/16"])).toBeNull();
    expect(refusal("fd00::5", ["fd00::/8"])).toBeNull();
  });

  test("a wider range that merely contains it does not", () => {
    expect(refusal("169.254.169.254", ["0.0.0.0/0"])).not.toBeNull();
    expect(refusal("10.1.2.3", ["10.0.0.0/7"])).not.toBeNull();
    expect(refusal("127.0.0.1", ["0.0.0.0/1"])).not.toBeNull();
    expect(refusal("::1", ["::/0"])).not.toBeNull();
    expect(refusal("fe80::1", ["fe00::/7"])).not.toBeNull();
  });

  test("a carried address is exempt only by an entry in the same form", () => {
    expect(refusal("64:ff9b::a9fe:a9fe", ["169.254.169.254"])).not.toBeNull();
    expect(refusal("64:ff9b::a9fe:a9fe", ["64:ff9b::a9fe:a9fe"])).toBeNull();
    expect(refusal("64:ff9b::a9fe:a9fe", ["64:ff9b::/96"])).not.toBeNull();
  });

  test("a public address does not need an entry, and an entry for one range does not open another", () => {
    expect(refusal("127.0.0.1", ["10.0.0.0/8", "169.254.169.254"])).not.toBeNull();
    expect(refusedRangeOf(ip("93.184.216.34"))).toBeNull();
  });
});
