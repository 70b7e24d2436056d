/**
 * The inside half, run by the sandbox init (init.ts) in the sandbox's own network namespace:
 * a loopback port (127.0.0.1 and, where the namespace has it, ::1) mapped to the policy
 * proxy's Unix socket bound in from outside. It decides nothing: every byte goes to the
 * proxy, which does all the checking. Bundled into the init (init-bundle.ts), so it imports
 * only what the sandbox may run: conn.ts, splice.ts and the errno names.
 */
import { connectConn, listenConns, type Conn, type ConnListener } from "./conn.ts";
import { splice } from "./splice.ts";
import { hasErrno } from "../../platform/errno.ts";

export interface ForwarderOptions {
  /** The proxy's socket, as seen from where the forwarder runs. */
  socketPath: string;
  /** 0 picks a free port (on 127.0.0.1; ::1 then gets the same one). */
  port: number;
  /** A connection the proxy's socket refused (ENOENT, ECONNREFUSED: the proxy is gone). */
  onError?: (error: Error) => void;
}

export interface Forwarder {
  port: number;
  /** The loopback addresses listened on: 127.0.0.1, and ::1 when the namespace has IPv6. */
  hosts: string[];
  close(): Promise<void>;
}

/** What listening on ::1 fails with where the namespace has no IPv6 loopback. */
const NO_IPV6 = ["EADDRNOTAVAIL", "EAFNOSUPPORT"] as const;

export async function startForwarder(options: ForwarderOptions): Promise<Forwarder> {
  const conns = new Set<Conn>();
  const track = (conn: Conn) => {
    conns.add(conn);
    conn.onClose(() => conns.delete(conn));
    return conn;
  };
  const forward = (client: Conn) => {
    track(client);
    connectConn({ unix: options.socketPath }).then(
      // The proxy counts and reports each connection; the forwarder has nothing to add.
      (upstream) => (client.closed ? upstream.destroy() : splice({ client, upstream: track(upstream), early: Buffer.alloc(0), clientEnded: false }, uncounted)),
      (error: Error) => {
        options.onError?.(error);
        client.destroy();
      },
    );
  };
  const v4 = listenConns({ hostname: "127.0.0.1", port: options.port }, forward);
  const listeners: ConnListener[] = [v4];
  const port = v4.port;
  const hosts = ["127.0.0.1"];
  try {
    listeners.push(listenConns({ hostname: "::1", port }, forward));
    hosts.push("::1");
  } catch (error) {
    if (!hasErrno(error, NO_IPV6)) {
      v4.stop(true);
      throw error;
    }
  }
  return {
    port,
    hosts,
    close: async () => {
      for (const listener of listeners) listener.stop(true);
      for (const conn of conns) conn.destroy();
    },
  };
}

function uncounted(): void {}
