/**
 * Connecting to an admitted destination: only to the addresses admission checked, as IP
 * literals (nothing is resolved here), one after the other until one answers.
 */
import net, { type Socket } from "node:net";
import { formatIp, type Ip } from "./ip.ts";
import { errnoOf } from "../../platform/errno.ts";

/** Opens a TCP connection to an IP literal (the socket may still be connecting). Injectable: tests count the attempts. */
export type Connector = (address: string, port: number) => Socket;

export const systemConnector: Connector = (address, port) => net.connect({ host: address, port, allowHalfOpen: true });

export type Attempt =
  | { ok: true; socket: Socket; ip: Ip }
  | { ok: false; address: string | null; reason: string; error: unknown };

/** The first of `addresses` that accepts a connection within `timeoutMs` each; the last failure otherwise. */
export async function connectFirst(connector: Connector, addresses: readonly Ip[], port: number, timeoutMs: number): Promise<Attempt> {
  let last: Attempt = { ok: false, address: null, reason: "no address to connect to", error: null };
  for (const ip of addresses) {
    const address = formatIp(ip);
    const socket = connector(address, port);
    const error = await connected(socket, timeoutMs);
    if (error === null) return { ok: true, socket, ip };
    last = { ok: false, address, reason: `cannot connect to ${address} port ${port} (${errnoOf(error) ?? (error as Error).message})`, error };
  }
  return last;
}

/** Null once `socket` is connected, else its failure (and the socket is destroyed). */
function connected(socket: Socket, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: "ETIMEDOUT" })), timeoutMs);
    const onConnect = () => finish(null);
    function finish(error: unknown) {
      clearTimeout(timer);
      socket.off("connect", onConnect);
      socket.off("error", finish);
      if (error) socket.destroy();
      resolve(error);
    }
    socket.once("connect", onConnect);
    socket.once("error", finish);
  });
}
