/**
 * The policy proxy: the sandboxed workload's only way out. It runs outside the sandbox and
 * listens on a Unix socket (Linux: inside, the sandbox init maps a loopback port to it) or on
 * a loopback TCP port of its own (macOS: the Seatbelt profile lets the workload reach that port
 * alone), and speaks, on that one socket, HTTP CONNECT, plain HTTP forward proxying and SOCKS5, told apart by the first
 * byte (5 is SOCKS5's version; an HTTP request starts with a method's letter).
 *
 * Each request is admitted (admission.ts) before any connection is made, and connected only
 * to the addresses admission checked. Every refusal answers the client properly (HTTP 403,
 * SOCKS 0x02) and is reported through `onDenied`; every allowed connection is counted.
 * Each client connection is independent: a slow or silent peer holds only its own bounded
 * buffers and its own timer, and at most `maxConnections` clients are served at once (a
 * workload opening more is refused, not queued without end).
 *
 * On Bun's own sockets (conn.ts), not node:net, whose load alone cost every exec under an
 * allowlist ~11 ms.
 */
import { admit, systemResolver, type Resolver } from "./admission.ts";
import type { Allowlist } from "./allowlist.ts";
import { listenConns, type Conn } from "./conn.ts";
import { CONNECT_ESTABLISHED, proxyResponse, readProxyRequest } from "./http-request.ts";
import { formatIp } from "./ip.ts";
import { ClosedEarly, OpeningReader, TooLarge } from "./opening-reader.ts";
import { readSocksRequest, Reply, replyForFailure, socksReply, SOCKS_VERSION } from "./socks5.ts";
import { splice, type SpliceCounts } from "./splice.ts";
import { connectFirst, systemConnector, type Connector } from "./upstream.ts";
import type { Target } from "./target.ts";
import { hasErrno, PEER_GONE } from "../../platform/errno.ts";

export type ProxyProtocol = "connect" | "http" | "socks5";

/** A refused request: by the policy (`onDenied`) or because the upstream could not be reached (`onFailure`). */
export interface RefusalEvent {
  protocol: ProxyProtocol | null;
  /** As the client named it (raw: escape before showing it to a person); null when it named none. */
  host: string | null;
  port: number | null;
  /** The address that decided the refusal, when one did. */
  address: string | null;
  reason: string;
}

/** An allowed connection, reported when it ends. `bytesIn` came from the upstream, `bytesOut` went to it. */
export interface ConnectionEvent extends SpliceCounts {
  protocol: ProxyProtocol;
  host: string;
  port: number;
  address: string;
}

export interface PolicyProxyOptions {
  /** The Unix socket to listen on; null: a free TCP port on 127.0.0.1 (`PolicyProxy.port`). */
  socketPath: string | null;
  allowlist: Allowlist;
  resolve?: Resolver;
  connect?: Connector;
  /** The most bytes of an HTTP head (431 beyond). */
  maxHeadBytes?: number;
  /** How long a client may take to send its whole head or SOCKS request (408, or the connection closed). */
  openingTimeoutMs?: number;
  resolveTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Clients served at once; one more is refused (reported, closed). */
  maxConnections?: number;
  onDenied?: (event: RefusalEvent) => void;
  onFailure?: (event: RefusalEvent) => void;
  onConnection?: (event: ConnectionEvent) => void;
  /** The proxy's own failures (its listener, an unexpected socket error): never silence. */
  onError?: (error: Error) => void;
}

export interface HostStats {
  connections: number;
  bytesIn: number;
  bytesOut: number;
}

export interface PolicyProxy {
  socketPath: string | null;
  /** The TCP port listened on, when there is no socket path. */
  port: number | null;
  /** Per host as the client named it: allowed connections ended so far and their bytes. */
  stats(): Map<string, HostStats>;
  /** Ends the listener and every open connection. */
  close(): Promise<void>;
}

/** How a proxied connection may end that is no failure of the proxy's: the peer left, or stopped answering. */
const CONNECTION_ENDED = [...PEER_GONE, "ETIMEDOUT"] as const;

/** What each option left out is. */
const DEFAULTS = { maxHeadBytes: 16 * 1024, openingTimeoutMs: 10_000, resolveTimeoutMs: 10_000, connectTimeoutMs: 10_000, maxConnections: 512 };

export async function startPolicyProxy(options: PolicyProxyOptions): Promise<PolicyProxy> {
  const settings = {
    ...options,
    resolve: options.resolve ?? systemResolver,
    connect: options.connect ?? systemConnector,
    maxHeadBytes: options.maxHeadBytes ?? DEFAULTS.maxHeadBytes,
    openingTimeoutMs: options.openingTimeoutMs ?? DEFAULTS.openingTimeoutMs,
    resolveTimeoutMs: options.resolveTimeoutMs ?? DEFAULTS.resolveTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
    maxConnections: options.maxConnections ?? DEFAULTS.maxConnections,
  };
  const conns = new Set<Conn>();
  let clients = 0;
  const stats = new Map<string, HostStats>();
  const onError = (error: Error) => settings.onError?.(error);
  /** Every connection is tracked until it closes: a peer leaving is expected, any other failure is reported. */
  const own = (conn: Conn) => {
    conns.add(conn);
    conn.onClose((_clean, error) => {
      conns.delete(conn);
      if (error && !hasErrno(error, CONNECTION_ENDED)) onError(error);
    });
    return conn;
  };
  const refuse = (kind: "denied" | "failed", event: RefusalEvent) => {
    (kind === "denied" ? settings.onDenied : settings.onFailure)?.(event);
  };
  const opened = (client: Conn, upstream: Conn, early: { rest: Buffer; ended: boolean }, event: Omit<ConnectionEvent, keyof SpliceCounts>) => {
    splice({ client, upstream, early: early.rest, clientEnded: early.ended }, (counts) => {
      const host = stats.get(event.host) ?? { connections: 0, bytesIn: 0, bytesOut: 0 };
      stats.set(event.host, { connections: host.connections + 1, bytesIn: host.bytesIn + counts.bytesIn, bytesOut: host.bytesOut + counts.bytesOut });
      settings.onConnection?.({ ...event, ...counts });
    });
  };

  /** Admits and connects; on refusal reports it and returns the client's answer instead. */
  async function reach(protocol: ProxyProtocol, target: Target, named: string) {
    const admission = await admit(settings, target);
    const base = { protocol, host: named, port: target.port };
    if (!admission.ok) {
      refuse(admission.kind, { ...base, address: admission.address, reason: admission.reason });
      return { ok: false as const, denied: admission.kind === "denied", reason: admission.reason, error: null };
    }
    const attempt = await connectFirst(settings.connect, admission.addresses, target.port, settings.connectTimeoutMs);
    if (!attempt.ok) {
      refuse("failed", { ...base, address: attempt.address, reason: attempt.reason });
      return { ok: false as const, denied: false, reason: attempt.reason, error: attempt.error };
    }
    return { ok: true as const, upstream: own(attempt.conn), address: formatIp(attempt.ip) };
  }

  async function serveHttp(client: Conn, reader: OpeningReader, opened_: () => void) {
    const request = readProxyRequest(await reader.head());
    opened_();
    if (request.kind === "bad") {
      refuse("denied", { protocol: "http", host: request.authority, port: null, address: null, reason: request.reason });
      return answer(client, reader, proxyResponse(400, request.reason));
    }
    const protocol = request.kind === "connect" ? "connect" : "http";
    const outcome = await reach(protocol, request.target, request.authority);
    if (!outcome.ok) {
      const status = outcome.denied ? 403 : hasErrno(outcome.error, ["ETIMEDOUT"]) ? 504 : 502;
      return answer(client, reader, proxyResponse(status, outcome.reason));
    }
    if (client.closed) return void outcome.upstream.destroy();
    if (request.kind === "connect") client.write(CONNECT_ESTABLISHED);
    // A forwarded request's head goes first, counted with the bytes sent to the upstream.
    const rest = request.kind === "connect" ? reader.release() : Buffer.concat([request.upstreamHead, reader.release()]);
    opened(client, outcome.upstream, { rest, ended: reader.ended }, { protocol, host: request.authority, port: request.target.port, address: outcome.address });
  }

  async function serveSocks(client: Conn, reader: OpeningReader, opened_: () => void) {
    const request = await readSocksRequest(reader, client);
    opened_();
    if (!request.ok) {
      refuse("denied", { protocol: "socks5", host: request.host, port: null, address: null, reason: request.reason });
      return answer(client, reader, request.answer);
    }
    const outcome = await reach("socks5", request.target, request.host);
    if (!outcome.ok) return answer(client, reader, socksReply(outcome.denied ? Reply.notAllowed : replyForFailure(outcome.error)));
    if (client.closed) return void outcome.upstream.destroy();
    client.write(socksReply(Reply.succeeded));
    opened(client, outcome.upstream, { rest: reader.release(), ended: reader.ended }, { protocol: "socks5", host: request.host, port: request.target.port, address: outcome.address });
  }

  async function serve(client: Conn) {
    own(client);
    clients++;
    client.onClose(() => clients--);
    if (clients > settings.maxConnections) {
      refuse("denied", { protocol: null, host: null, port: null, address: null, reason: `more than ${settings.maxConnections} connections at once` });
      return client.destroy();
    }
    const reader = new OpeningReader(client, settings.maxHeadBytes);
    let socks = false;
    const timer = setTimeout(() => {
      refuse("denied", { protocol: null, host: null, port: null, address: null, reason: `no complete request within ${settings.openingTimeoutMs} ms` });
      if (socks) client.destroy();
      else answer(client, reader, proxyResponse(408, "the request head took too long"));
    }, settings.openingTimeoutMs);
    const done = () => clearTimeout(timer);
    try {
      socks = (await reader.peek()) === SOCKS_VERSION;
      await (socks ? serveSocks(client, reader, done) : serveHttp(client, reader, done));
    } catch (error) {
      done();
      if (error instanceof TooLarge) {
        refuse("denied", { protocol: socks ? "socks5" : "http", host: null, port: null, address: null, reason: `request head larger than ${settings.maxHeadBytes} bytes` });
        if (socks) client.destroy();
        else answer(client, reader, proxyResponse(431, `request head larger than ${settings.maxHeadBytes} bytes`));
      } else if (error instanceof ClosedEarly) client.destroy();
      else {
        onError(error as Error);
        client.destroy();
      }
    }
  }

  const accept = (client: Conn) => void serve(client);
  const listener = settings.socketPath === null ? listenConns({ hostname: "127.0.0.1", port: 0 }, accept) : listenConns({ unix: settings.socketPath }, accept);
  return {
    socketPath: settings.socketPath,
    port: "port" in listener ? listener.port : null,
    stats: () => new Map(stats),
    close: async () => {
      listener.stop(true);
      for (const conn of conns) conn.destroy();
    },
  };
}

/** How long a refused client may keep its side open after the answer before it is closed. */
const LINGER_MS = 2000;

/** The bytes a refused client still sends go nowhere. */
function discard(): void {}

/**
 * Sends the proxy's own answer and ends the connection. What the client still sends (a body
 * meant for a refused host) is read and dropped meanwhile: closing with unread input would
 * reset the connection and could lose the answer before the client read it.
 */
function answer(client: Conn, reader: OpeningReader, bytes: string | Buffer): void {
  reader.release();
  client.read({ data: discard, end: discard });
  client.resume();
  client.end(bytes);
  const timer = setTimeout(() => client.destroy(), LINGER_MS);
  client.onClose(() => clearTimeout(timer));
}
