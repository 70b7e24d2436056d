/** How a request's host is read: a name is never an address in disguise, an address only in canonical text. */
import { describe, expect, test } from "bun:test";
import { formatIp, parseIp } from "../../src/sandbox/network/ip.ts";
import { parseAuthority, parseHost, type Host } from "../../src/sandbox/network/target.ts";

function shown(host: Host | null): string | null {
  if (!host) return null;
  return host.kind === "name" ? `name ${host.name}` : `ip ${formatIp(host.ip)}`;
}

describe("hosts as a client names them", () => {
  const CASES: [string, string | null][] = [
    ["Example.COM", "name example.com"],
    ["example.com.", "name example.com"],
    ["localhost.", "name localhost"],
    ["xn--bcher-kva.example", "name xn--bcher-kva.example"],
    ["127.0.0.1", "ip 127.0.0.1"],
    ["::ffff:127.0.0.1", "ip 127.0.0.1"],
    ["::ffff:7f00:1", "ip 127.0.0.1"],
    ["::1", "ip ::1"],
    // What inet_aton would turn into 127.0.0.1 (or another address) is not a host at all.
    ["127.1", null],
    ["127.0.1", null],
    ["0x7f.1", null],
    ["0x7f000001", null],
    ["2130706433", null],
    ["0177.0.0.1", null],
    ["017700000001", null],
    ["127.0.0.1.", null],
    ["1.2.3.4.5", null],
    ["example.0x10", null],
    ["example.123", null],
    ["fe80::1%eth0", null],
    ["bücher.example", null],
    ["exa mple.com", null],
    ["a..b", null],
    ["", null],
    [".", null],
    ["a".repeat(64) + ".example", null],
    ["evil.com\r\nX: y", null],
  ];
  for (const [text, expected] of CASES) {
    test(`${JSON.stringify(text)} → ${expected ?? "refused"}`, () => expect(shown(parseHost(text, false))).toBe(expected));
  }

  test("names may end in a label that starts with a digit but is not a number", () => {
    expect(shown(parseHost("host.1a", false))).toBe("name host.1a");
  });
});

describe("authorities", () => {
  test("host:port, [v6]:port, and the default port only where allowed", () => {
    expect(parseAuthority("example.com:443", null)).toEqual({ host: { kind: "name", name: "example.com" }, port: 443 });
    expect(parseAuthority("[::ffff:7f00:1]:80", null)).toEqual({ host: { kind: "ip", ip: parseIp("127.0.0.1")! }, port: 80 });
    expect(parseAuthority("example.com", 80)?.port).toBe(80);
    expect(parseAuthority("example.com", null)).toBeNull();
    expect(parseAuthority("[::1]", 80)?.port).toBe(80);
  });

  for (const bad of ["::1:443", "[::1", "[::1]x", "[127.0.0.1]:80", "example.com:", "example.com:0", "example.com:65536", "example.com:+80", "example.com:0080", "user@example.com:80"]) {
    test(`${JSON.stringify(bad)} is refused`, () => expect(parseAuthority(bad, 80)).toBeNull());
  }
});
