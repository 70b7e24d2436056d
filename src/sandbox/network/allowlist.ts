/**
 * The network allowlist a sandboxed workload runs under: the setting `{"allow": [entries]}`,
 * its schema (what `config check` reports) and the compiled rules the proxy asks.
 *
 * Entries: `api.example.com` (exactly that name), `*.example.com` (every name below it, at any
 * depth, but NOT `example.com` itself: list both when both are meant; a wildcard that also
 * matched the apex would widen the policy beyond what was written), `10.0.0.5`, `10.0.0.0/8`,
 * `2001:db8::1`, `2001:db8::/32`, each with an optional `:port` (IPv6 then in brackets:
 * `[2001:db8::1]:443`). Without a port an entry allows 80 and 443. Names are compared
 * case-insensitively, without their trailing dot, as written (international names in punycode).
 */
import * as v from "valibot";
import { bitsOf, formatIp, IPV4_MAPPED, parseIpv4, parseRange, rangeContains, rangeWithin, type Ip, type IpRange } from "./ip.ts";
import { endsInNumber, normaliseName, parsePort, unmapped } from "./target.ts";

/** The ports an entry without `:port` allows: plain HTTP and HTTPS. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

export type AllowRule =
  | { kind: "name"; name: string; ports: readonly number[] }
  | { kind: "suffix"; suffix: string; ports: readonly number[] }
  | { kind: "range"; range: IpRange; ports: readonly number[] };

/** What options.network may be, as every message about it says (settings.ts's too). */
export const NETWORK_FORMS = `"host", "none" or {"allow": ["api.example.com", "*.example.org", "10.0.0.5:5432"]}`;

const EXAMPLES = `"api.example.com", "*.example.com", "example.com:8443", "10.0.0.5:5432", "10.0.0.0/8" or "[2001:db8::1]:443"`;

/** One entry's rule, or what is wrong with it (a phrase that follows "is not an allow entry: "). */
export function parseEntry(text: string): AllowRule | string {
  if (/[^\x21-\x7e]/.test(text)) return "write it in ASCII without spaces (an international name in punycode: xn--…)";
  if (text.startsWith("[")) return bracketed(text);
  if (text.split(":").length > 2) return parseRange(text) ? rangeRule(text, DEFAULT_PORTS) : "an IPv6 address with a port goes in brackets: [2001:db8::1]:443";
  const colon = text.indexOf(":");
  const ports = colon < 0 ? DEFAULT_PORTS : portList(text.slice(colon + 1));
  if (typeof ports === "string") return ports;
  const host = colon < 0 ? text : text.slice(0, colon);
  if (host.includes("/") || parseIpv4(host)) return parseRange(host) ? rangeRule(host, ports) : "a range is an address and a prefix length with the host bits zero: 10.0.0.0/8";
  if (host === "*") return "a lone * would allow everything; name the hosts";
  const wildcard = host.startsWith("*.");
  const name = normaliseName(wildcard ? host.slice(2) : host);
  if (name) return wildcard ? { kind: "suffix", suffix: name, ports } : { kind: "name", name, ports };
  if (/^[0-9a-fx.]+$/i.test(host) && endsInNumber(host.replace(/\.$/, "").split("."))) return "an IPv4 address is four decimal numbers 0-255 without leading zeros: 10.0.0.5";
  return "a host name is labels of letters, digits, - and _ between dots; a wildcard is *. before one";
}

function bracketed(text: string): AllowRule | string {
  const close = text.indexOf("]");
  const inner = close < 0 ? "" : text.slice(1, close);
  const range = inner.includes(":") ? parseRange(inner) : null;
  if (!range) return "brackets hold an IPv6 address or range: [2001:db8::1]:443";
  const rest = text.slice(close + 1);
  const ports = rest === "" ? DEFAULT_PORTS : rest.startsWith(":") ? portList(rest.slice(1)) : "after ] comes :port";
  return typeof ports === "string" ? ports : rangeOrProblem(range, ports);
}

function rangeRule(text: string, ports: readonly number[]): AllowRule | string {
  return rangeOrProblem(parseRange(text)!, ports);
}

/** The proxy reads `::ffff:a.b.c.d` as the IPv4 address: an entry must name it that way to match. */
function rangeOrProblem(range: IpRange, ports: readonly number[]): AllowRule | string {
  return rangeWithin(range, IPV4_MAPPED()) ? "write an IPv4-mapped address as the IPv4 address itself: 10.0.0.5" : { kind: "range", range, ports };
}

function portList(text: string): readonly number[] | string {
  const port = parsePort(text);
  return port === null ? "a port is a number 1-65535 after the last colon: example.com:8443" : [port];
}

/** The entry in one canonical spelling (lower case, canonical address text), for the record and for dedup. */
export function formatRule(rule: AllowRule): string {
  const port = rule.ports === DEFAULT_PORTS ? "" : `:${rule.ports[0]}`;
  if (rule.kind === "name") return `${rule.name}${port}`;
  if (rule.kind === "suffix") return `*.${rule.suffix}${port}`;
  const address = formatIp({ family: rule.range.family, value: rule.range.network });
  const text = rule.range.prefix === bitsOf(rule.range.family) ? address : `${address}/${rule.range.prefix}`;
  return rule.range.family === 6 && port ? `[${text}]${port}` : `${text}${port}`;
}

/** An entry may be quoted in a diagnostic when it is short and of host characters only (it could be a pasted secret). */
function quotable(text: string): string {
  return /^[A-Za-z0-9.:*[\]/_-]{1,100}$/.test(text) ? ` ${JSON.stringify(text)}` : "";
}

/**
 * The schema of the setting, messages naming `options.network`. Output: the entries in
 * canonical spelling without duplicates (what is recorded with the workspace).
 */
export function allowSettingSchema() {
  const listMessage = `options.network.allow must be a list of entries such as ${EXAMPLES}`;
  return v.strictObject(
    {
      allow: v.pipe(
        v.array(v.string(listMessage), listMessage),
        v.rawTransform(({ dataset, addIssue, NEVER }) => {
          const canonical: string[] = [];
          dataset.value.forEach((text, index) => {
            const rule = parseEntry(text);
            if (typeof rule === "string") addIssue({ message: `options.network.allow entry ${index + 1}${quotable(text)} is not an allow entry: ${rule} (for example ${EXAMPLES})` });
            else canonical.push(formatRule(rule));
          });
          return canonical.length === dataset.value.length ? [...new Set(canonical)] : NEVER;
        }),
      ),
    },
    (issue) => `options.network must be ${NETWORK_FORMS}${issue.expected === "never" ? ` (unknown key ${JSON.stringify(String(issue.path?.at(-1)?.key))})` : ""}`,
  );
}

/** The compiled rules: what the proxy asks for every request. */
export interface Allowlist {
  /** Whether a name entry (exact or wildcard) allows `name` (normalised) on `port`. */
  allows(name: string, port: number): boolean;
  /** Whether some entry names `name` on any port: tells "port not allowed" from "host not allowed". */
  namesHost(name: string): boolean;
  /** Whether an address or range entry allows `address` on `port`. */
  allowsAddress(address: Ip, port: number): boolean;
  /** The ranges of the address entries that allow `address` on `port` (the address rule asks how narrow they are). */
  rangesAllowing(address: Ip, port: number): IpRange[];
}

function nameMatches(rule: AllowRule, name: string): boolean {
  if (rule.kind === "name") return rule.name === name;
  return rule.kind === "suffix" && name.endsWith(`.${rule.suffix}`);
}

/** Compiles entries already validated by the schema; throws on one that is not (a programming error). */
export function compileAllowlist(entries: readonly string[]): Allowlist {
  const rules = entries.map((text) => {
    const rule = parseEntry(text);
    if (typeof rule === "string") throw new Error(`not an allow entry (${rule})`);
    return rule;
  });
  const rangesAllowing = (address: Ip, port: number) =>
    rules.flatMap((rule) => (rule.kind === "range" && rule.ports.includes(port) && rangeContains(rule.range, address) ? [rule.range] : []));
  return {
    allows: (name, port) => rules.some((rule) => rule.ports.includes(port) && nameMatches(rule, name)),
    namesHost: (name) => rules.some((rule) => nameMatches(rule, name)),
    allowsAddress: (address, port) => rangesAllowing(unmapped(address), port).length > 0,
    rangesAllowing: (address, port) => rangesAllowing(unmapped(address), port),
  };
}
