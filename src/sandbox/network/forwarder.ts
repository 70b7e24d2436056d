/**
 * The inside half: runs in the sandbox's own network namespace, where loopback is the only
 * interface, and maps a loopback port (127.0.0.1 and, where the namespace has it, ::1) to the
 * policy proxy's Unix socket bound in from outside. It decides nothing: every byte goes to
 * the proxy, which does all the checking.
 */
import net, { type Server, type Socket } from "node:net";
import { splice } from "./splice.ts";
import { hasErrno, PEER_GONE } from "../../platform/errno.ts";

export interface ForwarderOptions {
  /** The proxy's socket, as seen from where the forwarder runs. */
  socketPath: string;
  /** 0 picks a free port (on 127.0.0.1; ::1 then gets the same one). */
  port: number;
  /** A failure of the forwarder itself, or a connection the proxy's socket refused. */
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
  const sockets = new Set<Socket>();
  const onError = (error: Error) => options.onError?.(error);
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", (error) => {
      // A peer leaving is expected; anything else (ENOENT, ECONNREFUSED: the proxy is gone) is reported.
      if (!hasErrno(error, PEER_GONE)) onError(error);
    });
    return socket;
  };
  const forward = (client: Socket) => {
    track(client);
    client.pause();
    const upstream = track(net.connect({ path: options.socketPath, allowHalfOpen: true }));
    // The proxy counts and reports each connection; the forwarder has nothing to add.
    upstream.once("connect", () => splice({ client, upstream, early: Buffer.alloc(0), clientEnded: false }, uncounted));
    upstream.once("error", () => client.destroy());
  };
  const servers: Server[] = [];
  const v4 = await listen(forward, "127.0.0.1", options.port);
  servers.push(v4);
  const port = (v4.address() as net.AddressInfo).port;
  const hosts = ["127.0.0.1"];
  try {
    servers.push(await listen(forward, "::1", port));
    hosts.push("::1");
  } catch (error) {
    if (!hasErrno(error, NO_IPV6)) {
      v4.close();
      throw error;
    }
  }
  for (const server of servers) server.on("error", onError);
  return {
    port,
    hosts,
    close: async () => {
      const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
      for (const socket of sockets) socket.destroy();
      await Promise.all(closed);
    },
  };
}

function uncounted(): void {}

function listen(handle: (socket: Socket) => void, host: string, port: number): Promise<Server> {
  const server = net.createServer({ allowHalfOpen: true }, handle);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port, ipv6Only: host === "::1" }, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}
