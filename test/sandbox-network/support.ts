/**
 * Kit for the proxy tests: a proxy on a Unix socket in a temp dir, a resolver that maps names
 * the test chooses, a connector that records every connection attempt (and makes real ones:
 * only to loopback, the only addresses a test ever lets through), loopback servers, and raw
 * clients for HTTP and SOCKS5.
 */
import { mkdtempSync, rmSync } from "node:fs";
import net, { type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileAllowlist } from "../../src/sandbox/network/allowlist.ts";
import { startPolicyProxy, type ConnectionEvent, type PolicyProxy, type PolicyProxyOptions, type RefusalEvent } from "../../src/sandbox/network/proxy.ts";
import { systemConnector } from "../../src/sandbox/network/upstream.ts";

export interface TestProxy {
  proxy: PolicyProxy;
  socketPath: string;
  denied: RefusalEvent[];
  failures: RefusalEvent[];
  connections: ConnectionEvent[];
  errors: Error[];
  /** Every `address:port` the proxy tried to connect to. */
  attempts: string[];
  /** Every name the proxy asked the resolver for. */
  lookups: string[];
  close(): Promise<void>;
}

export async function startTestProxy(allow: string[], names: Record<string, string[]> = {}, options: Partial<PolicyProxyOptions> = {}): Promise<TestProxy> {
  const dir = mkdtempSync(join(tmpdir(), "paseo-proxy-"));
  const socketPath = join(dir, "proxy.sock");
  const kit = { denied: [] as RefusalEvent[], failures: [] as RefusalEvent[], connections: [] as ConnectionEvent[], errors: [] as Error[], attempts: [] as string[], lookups: [] as string[] };
  for (const address of Object.values(names).flat()) {
    // The guard of this kit: a test may map a name anywhere, but the proxy may only ever reach loopback.
    if (!["127.0.0.1", "::1"].includes(address) && address !== "" && !isRefusedByDesign(address)) throw new Error(`test maps a name to ${address}: use loopback or an address the proxy must refuse`);
  }
  const proxy = await startPolicyProxy({
    socketPath,
    allowlist: compileAllowlist(allow),
    resolve: async (name) => {
      kit.lookups.push(name);
      const addresses = names[name];
      if (!addresses) throw Object.assign(new Error(`no such test name ${name}`), { code: "ENOTFOUND" });
      return addresses.map((address) => ({ address }));
    },
    connect: (address, port) => {
      kit.attempts.push(`${address}:${port}`);
      if (address !== "127.0.0.1" && address !== "::1") throw new Error(`the proxy tried to connect to ${address}: a test must never send a packet off loopback`);
      return systemConnector(address, port);
    },
    onDenied: (event) => kit.denied.push(event),
    onFailure: (event) => kit.failures.push(event),
    onConnection: (event) => kit.connections.push(event),
    onError: (error) => kit.errors.push(error),
    ...options,
  });
  return {
    ...kit,
    proxy,
    socketPath,
    close: async () => {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Non-loopback addresses a test may map names to: each is refused by the address rule before any connection. */
function isRefusedByDesign(address: string): boolean {
  return ["169.254.169.254", "10.1.2.3", "224.0.0.251", "192.168.1.1", "93.184.216.34", "fd00::1", "::ffff:169.254.169.254"].includes(address);
}

/** Connects to the proxy (its socket path, or its port on 127.0.0.1), sends `bytes`, and returns everything received until the proxy closes. */
export function exchange(where: string | number, bytes: string | Buffer, timeoutMs = 10_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = typeof where === "number" ? net.connect({ host: "127.0.0.1", port: where }) : net.connect({ path: where });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no end from the proxy within ${timeoutMs} ms; got ${JSON.stringify(Buffer.concat(chunks).toString("latin1"))}`));
    }, timeoutMs);
    socket.on("connect", () => socket.write(bytes));
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
  });
}

/** An HTTP/1.1 server on loopback that answers every request with its own request head, as text. */
export function startEchoHeadServer(hostname = "127.0.0.1") {
  return Bun.serve({
    hostname,
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      const head = [`${request.method} ${url.pathname}${url.search}`, ...[...request.headers].map(([name, value]) => `${name}: ${value}`)].join("\n");
      return new Response(head);
    },
  });
}

/** A TCP server on loopback that writes back every byte it gets. */
export async function startEchoServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Reads from `socket` until `count` bytes came (or it closed). */
export function readBytes(socket: Socket, count: number, timeoutMs = 10_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    const timer = setTimeout(() => finish(new Error(`only ${buffer.length} of ${count} bytes within ${timeoutMs} ms`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (buffer.length >= count) finish(null);
    };
    const onClose = () => finish(null);
    function finish(error: Error | null) {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onClose);
      socket.pause();
      if (error) reject(error);
      else resolve(buffer);
    }
    socket.on("data", onData);
    socket.on("close", onClose);
    socket.resume();
  });
}

export function connectTo(socketPath: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ path: socketPath, allowHalfOpen: true });
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** A SOCKS5 CONNECT request for a domain name. */
export function socksDomainRequest(name: string, port: number, command = 1): Buffer {
  const nameBytes = Buffer.from(name, "latin1");
  return Buffer.concat([Buffer.from([5, command, 0, 3, nameBytes.length]), nameBytes, portBytes(port)]);
}

export function socksIpv4Request(address: string, port: number): Buffer {
  return Buffer.concat([Buffer.from([5, 1, 0, 1, ...address.split(".").map(Number)]), portBytes(port)]);
}

export function portBytes(port: number): Buffer {
  const bytes = Buffer.alloc(2);
  bytes.writeUInt16BE(port);
  return bytes;
}

/** Greeting (no auth) then `request`: returns the proxy's method choice and reply, and the socket for what follows. */
export async function socksConnect(socketPath: string, request: Buffer): Promise<{ method: Buffer; reply: Buffer; socket: Socket }> {
  const socket = await connectTo(socketPath);
  socket.write(Buffer.from([5, 1, 0]));
  const method = await readBytes(socket, 2);
  socket.write(request);
  const reply = await readBytes(socket, 10);
  return { method, reply, socket };
}
