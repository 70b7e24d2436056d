/**
 * Connecting to an admitted destination: only to the addresses admission checked, as IP
 * literals (nothing is resolved here), one after the other until one answers.
 */
import { connectConn, type Conn } from "./conn.ts";
import { formatIp, type Ip } from "./ip.ts";
import { errnoOf } from "../../platform/errno.ts";
import { within } from "../../within.ts";

/** Opens a TCP connection to an IP literal; rejects with the failure (its `code` the errno). Injectable: tests count the attempts. */
export type Connector = (address: string, port: number) => Promise<Conn>;

export const systemConnector: Connector = (address, port) => connectConn({ hostname: address, port });

export type Attempt =
  | { ok: true; conn: Conn; ip: Ip }
  | { ok: false; address: string | null; reason: string; error: unknown };

/** The first of `addresses` that accepts a connection within `timeoutMs` each; the last failure otherwise. */
export async function connectFirst(connector: Connector, addresses: readonly Ip[], port: number, timeoutMs: number): Promise<Attempt> {
  let last: Attempt = { ok: false, address: null, reason: "no address to connect to", error: null };
  for (const ip of addresses) {
    const address = formatIp(ip);
    const outcome = await connected(connector(address, port), timeoutMs);
    if (!(outcome instanceof Error)) return { ok: true, conn: outcome, ip };
    last = { ok: false, address, reason: `cannot connect to ${address} port ${port} (${errnoOf(outcome) ?? outcome.message})`, error: outcome };
  }
  return last;
}

/** The connection, or its failure; one that answers after the timeout is closed at once. */
async function connected(attempt: Promise<Conn>, timeoutMs: number): Promise<Conn | Error> {
  const outcome = attempt.catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  const settled = await within(outcome, timeoutMs, null);
  if (settled !== null) return settled;
  void outcome.then((late) => (late instanceof Error ? undefined : late.destroy()));
  return Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: "ETIMEDOUT" });
}
