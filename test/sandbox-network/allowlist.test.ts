/** The network allowlist setting: what config check accepts and says, and what the compiled rules allow. */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { allowSettingSchema, compileAllowlist, parseEntry, type Allowlist } from "../../src/sandbox/network/allowlist.ts";
import { parseIp } from "../../src/sandbox/network/ip.ts";
import { readOptions } from "../../src/options.ts";

const schema = allowSettingSchema();

function problems(input: unknown): string[] {
  const result = v.safeParse(schema, input);
  return result.success ? [] : result.issues.map((issue) => issue.message);
}

/** Whether `list` allows the address written `text` on `port`: text that is no address (parseIp) is allowed by no address entry. */
function allowsAddressText(list: Allowlist, text: string, port: number): boolean {
  const ip = parseIp(text);
  return ip !== null && list.allowsAddress(ip, port);
}

function parsed(entries: string[]): string[] {
  return v.parse(schema, { allow: entries }).allow;
}

describe("the setting's schema", () => {
  test("every kind of entry is accepted and written in one canonical spelling", () => {
    expect(
      parsed(["API.Example.COM.", "*.NPMjs.org", "github.com:443", "10.0.0.5:5432", "10.0.0.0/8", "2001:DB8:0::1", "[2001:db8::1]:8443", "[2001:db8::/32]", "fd00::/8", "xn--bcher-kva.example"]),
    ).toEqual(["api.example.com", "*.npmjs.org", "github.com:443", "10.0.0.5:5432", "10.0.0.0/8", "2001:db8::1", "[2001:db8::1]:8443", "2001:db8::/32", "fd00::/8", "xn--bcher-kva.example"]);
  });

  test("duplicates collapse, also when spelled differently", () => {
    expect(parsed(["Example.com", "example.com.", "[2001:db8::1]", "2001:db8:0:0::1"])).toEqual(["example.com", "2001:db8::1"]);
  });

  test("strict: an unknown key, a non-list or a non-string is refused naming the option", () => {
    expect(problems({ allow: [], deny: [] })[0]).toContain('unknown key "deny"');
    expect(problems({ allow: "example.com" })[0]).toStartWith("options.network.allow must be a list of entries such as");
    expect(problems({ allow: [443] })[0]).toStartWith("options.network.allow must be a list of entries such as");
    expect(problems("example.com")[0]).toStartWith('options.network must be "host", "none" or {"allow": [');
  });

  test("as the option, the message is the allow object's own where it has one (an entry, the list, an unknown key), else the general one", () => {
    const message = (network: unknown) => {
      try {
        readOptions({ network });
        return null;
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(message({ allow: ["ok.example"], alow: [] })).toBe(`options.network must be "host", "none" or {"allow": ["api.example.com", "*.example.org", "10.0.0.5:5432"]} (unknown key "alow")`);
    expect(message({ allow: "example.com" })).toStartWith("options.network.allow must be a list of entries such as");
    expect(message({ allow: ["ok.example", "127.1"] })).toStartWith('options.network.allow entry 2 "127.1" is not an allow entry');
    expect(message("off")).toBe('options.network must be "host", "none" or {"allow": ["api.example.com", "*.example.org", "10.0.0.5:5432"]}, got a string');
  });

  // Each bad entry: what config check says about it (the entry, its position, what a good one looks like).
  const BAD: [string, string][] = [
    ["exa mple.com", "write it in ASCII without spaces"],
    ["bücher.example", "punycode"],
    ["127.1", "an IPv4 address is four decimal numbers"],
    ["0x7f.1", "an IPv4 address is four decimal numbers"],
    ["010.0.0.1", "without leading zeros"],
    ["2130706433", "an IPv4 address is four decimal numbers"],
    ["10.0.0.1/8", "the host bits zero"],
    ["10.0.0.0/33", "the host bits zero"],
    ["example.com:0", "a port is a number 1-65535"],
    ["example.com:65536", "a port is a number 1-65535"],
    ["example.com:08", "a port is a number 1-65535"],
    ["2001:db8::1:443x", "an IPv6 address with a port goes in brackets"],
    ["[2001:db8::1]443", "after ] comes :port"],
    ["[10.0.0.1]:443", "brackets hold an IPv6 address"],
    ["::ffff:10.0.0.5", "write an IPv4-mapped address as the IPv4 address itself"],
    ["*", "a lone * would allow everything"],
    ["*.*.example.com", "a host name is labels of"],
    ["example..com", "a host name is labels of"],
    ["", "a host name is labels of"],
  ];
  for (const [entry, says] of BAD) {
    test(`${JSON.stringify(entry)} is refused: ${says}`, () => {
      const [message] = problems({ allow: ["ok.example", entry] });
      expect(message).toContain("options.network.allow entry 2");
      expect(message).toContain(says);
      expect(message).toContain('for example "api.example.com"');
    });
  }

  test("an entry that could be a pasted secret is not quoted back", () => {
    const [message] = problems({ allow: ["ghp_secret token value"] });
    expect(message).not.toContain("secret");
    expect(message).toStartWith("options.network.allow entry 1 is not an allow entry");
  });

  test("every bad entry is reported, one message each", () => {
    expect(problems({ allow: ["a b", "ok.example", "10.0.0.1/8"] })).toHaveLength(2);
  });
});

describe("the compiled rules", () => {
  const list = compileAllowlist(parsed(["api.example.com", "*.npmjs.org", "github.com:22", "10.0.0.5:5432", "192.168.0.0/16", "[2001:db8::/32]:8443"]));

  test("an exact name on the default ports 80 and 443 only", () => {
    expect(list.allows("api.example.com", 443)).toBe(true);
    expect(list.allows("api.example.com", 80)).toBe(true);
    expect(list.allows("api.example.com", 8080)).toBe(false);
    expect(list.allows("other.example.com", 443)).toBe(false);
    expect(list.allows("example.com", 443)).toBe(false);
  });

  test("a wildcard matches names below it at any depth but not the name itself", () => {
    expect(list.allows("registry.npmjs.org", 443)).toBe(true);
    expect(list.allows("a.b.registry.npmjs.org", 443)).toBe(true);
    expect(list.allows("npmjs.org", 443)).toBe(false);
    expect(list.allows("evilnpmjs.org", 443)).toBe(false);
    expect(list.allows("npmjs.org.evil.example", 443)).toBe(false);
  });

  test("a port given replaces the defaults", () => {
    expect(list.allows("github.com", 22)).toBe(true);
    expect(list.allows("github.com", 443)).toBe(false);
    expect(list.namesHost("github.com")).toBe(true);
    expect(list.namesHost("gitlab.com")).toBe(false);
  });

  test("addresses and ranges, with their ports; a mapped IPv6 spelling is the IPv4 address", () => {
    expect(allowsAddressText(list, "10.0.0.5", 5432)).toBe(true);
    expect(allowsAddressText(list, "::ffff:10.0.0.5", 5432)).toBe(true);
    expect(allowsAddressText(list, "10.0.0.5", 443)).toBe(false);
    expect(allowsAddressText(list, "10.0.0.6", 5432)).toBe(false);
    expect(allowsAddressText(list, "192.168.44.1", 80)).toBe(true);
    expect(allowsAddressText(list, "2001:db8:ffff::1", 8443)).toBe(true);
    expect(allowsAddressText(list, "2001:db9::1", 8443)).toBe(false);
    expect(allowsAddressText(list, "not an address", 80)).toBe(false);
    expect(list.rangesAllowing(parseIp("192.168.1.1")!, 443)).toEqual([{ family: 4, network: 0xc0a80000n, prefix: 16 }]);
  });

  test("names never match address entries, nor addresses name entries", () => {
    const mixed = compileAllowlist(["10.0.0.5", "example.com"]);
    expect(mixed.allows("10.0.0.5", 443)).toBe(false);
    expect(allowsAddressText(mixed, "example.com", 443)).toBe(false);
  });

  test("parseEntry and the schema agree: a canonical entry parses to itself", () => {
    for (const entry of parsed(["*.a.example", "[::1]:9", "0.0.0.0/0"])) expect(typeof parseEntry(entry)).toBe("object");
  });
});
