/**
 * Whether a request may go where it asks, and to which addresses: the host against the
 * allowlist, then the name resolved here (never in the sandbox), then every address against
 * the address rule. The addresses returned are the only ones the proxy may connect to; it
 * never resolves again, so no answer that changes between check and use (DNS rebinding) can
 * slip through.
 *
 * A name whose answers are partly refused is refused whole, not connected to through its good
 * addresses: a mixed answer is what a rebinding attempt looks like, skipping would make the
 * outcome depend on answer order, and the refusal is visible where a skip would be silent.
 */
import { addressRefusal } from "./address-rule.ts";
import type { Allowlist } from "./allowlist.ts";
import { formatIp, parseIp, type Ip } from "./ip.ts";
import { unmapped, type Target } from "./target.ts";
import { errnoOf } from "../../platform/errno.ts";
import { within } from "../../within.ts";

/** A name's addresses, as `dns.lookup(name, {all: true})` gives them. */
export type Resolver = (name: string) => Promise<readonly { address: string }[]>;

/**
 * The system resolver (getaddrinfo: /etc/hosts, then DNS), so a test's own /etc/hosts maps
 * names. Loaded at the first name, not when the proxy starts: an exec that resolves nothing
 * does not pay for it.
 */
export const systemResolver: Resolver = async (name) => (await import("node:dns/promises")).lookup(name, { all: true });

export type Admission =
  | { ok: true; addresses: Ip[] }
  /** `denied`: the policy says no (403, SOCKS 0x02); `failed`: the name could not be resolved (502, SOCKS 0x04). */
  | { ok: false; kind: "denied" | "failed"; address: string | null; reason: string };

export interface AdmissionPolicy {
  allowlist: Allowlist;
  resolve: Resolver;
  resolveTimeoutMs: number;
}

function denied(reason: string, address: Ip | string | null = null): Admission {
  return { ok: false, kind: "denied", address: typeof address === "object" && address ? formatIp(address) : address, reason };
}

export async function admit(policy: AdmissionPolicy, target: Target): Promise<Admission> {
  const { host, port } = target;
  if (host.kind === "ip") {
    if (!policy.allowlist.allowsAddress(host.ip, port)) return denied(`address ${formatIp(host.ip)} port ${port} is not on the allowlist`, host.ip);
    return checked([host.ip], policy, port);
  }
  if (!policy.allowlist.allows(host.name, port)) {
    return denied(policy.allowlist.namesHost(host.name) ? `port ${port} is not allowed for ${host.name}` : `host ${host.name} is not on the allowlist`);
  }
  const answers = await resolved(policy, host.name);
  if (typeof answers === "string") return { ok: false, kind: "failed", address: null, reason: answers };
  const addresses: Ip[] = [];
  for (const { address } of answers) {
    const ip = parseIp(address);
    if (!ip) return denied(`${host.name} resolved to an address the proxy does not read`, address);
    addresses.push(unmapped(ip));
  }
  return checked(addresses, policy, port);
}

function checked(addresses: Ip[], policy: AdmissionPolicy, port: number): Admission {
  for (const ip of addresses) {
    const refusal = addressRefusal(ip, policy.allowlist.rangesAllowing(ip, port));
    if (refusal) return denied(`${formatIp(ip)}: ${refusal}`, ip);
  }
  const unique = new Map(addresses.map((ip) => [formatIp(ip), ip]));
  return { ok: true, addresses: [...unique.values()] };
}

/** The name's answers, or why there are none (the resolver's errno, a timeout, an empty answer). */
async function resolved(policy: AdmissionPolicy, name: string): Promise<readonly { address: string }[] | string> {
  try {
    const answers = await within(policy.resolve(name), policy.resolveTimeoutMs, `resolving ${name} took longer than ${policy.resolveTimeoutMs} ms`);
    if (typeof answers !== "string" && answers.length === 0) return `${name} has no address`;
    return answers;
  } catch (error) {
    // Every resolver failure is an outcome to report (ENOTFOUND, EAI_AGAIN…), never a pass.
    return `cannot resolve ${name} (${errnoOf(error) ?? (error as Error).message})`;
  }
}
