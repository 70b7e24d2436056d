/**
 * Git servers on 127.0.0.1 for tests: a smart-HTTP server (`git http-backend` behind Basic
 * authentication) and a listener that accepts connections and never answers.
 */

/** A server the test stops; `url` is where git is pointed. */
export interface TestServer {
  port: number;
  stop(): void;
}

/**
 * A TCP listener that accepts every connection and never sends a byte: git waits on it
 * forever (git:// and http:// alike). `onConnect` runs as each connection is accepted, while
 * the client that made it is certainly alive.
 */
export function stalledServer(onConnect: () => void = () => {}): TestServer & { connections(): number } {
  const sockets: { end(): void }[] = [];
  const open = (socket: { end(): void }) => {
    sockets.push(socket);
    onConnect();
  };
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open, data() {} } });
  return {
    port: server.port,
    connections: () => sockets.length,
    stop: () => {
      for (const socket of sockets) socket.end();
      server.stop(true);
    },
  };
}

/** What a smart-HTTP server saw: every request's path and Authorization header. */
export interface SeenRequest {
  path: string;
  authorization: string | null;
}

/**
 * Serves the bare repositories under `root` over smart HTTP, requiring Basic `user:password`.
 * `onRequest` runs before each answer, while the git client waits for it.
 */
export function httpGitServer(root: string, credentials: { user: string; password: string }, onRequest: () => void = () => {}): TestServer & { seen: SeenRequest[] } {
  const expected = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString("base64")}`;
  const seen: SeenRequest[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const authorization = request.headers.get("authorization");
      seen.push({ path: url.pathname, authorization });
      onRequest();
      if (authorization !== expected) return new Response("authentication required\n", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="test"' } });
      return await httpBackend(root, url, request);
    },
  });
  return { port: server.port!, seen, stop: () => void server.stop(true) };
}

/** Runs `git http-backend` (CGI) for one request and turns its output into a Response. */
async function httpBackend(root: string, url: URL, request: Request): Promise<Response> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: "1",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    PATH_INFO: url.pathname,
    QUERY_STRING: url.search.replace(/^\?/, ""),
    REQUEST_METHOD: request.method,
    REMOTE_USER: "test",
    REMOTE_ADDR: "127.0.0.1",
  };
  const header = (name: string, variable: string) => {
    const value = request.headers.get(name);
    if (value !== null) env[variable] = value;
  };
  header("content-type", "CONTENT_TYPE");
  header("content-encoding", "HTTP_CONTENT_ENCODING");
  header("git-protocol", "GIT_PROTOCOL");
  const body = new Uint8Array(await request.arrayBuffer());
  const proc = Bun.spawn({ cmd: ["git", "http-backend"], env, stdin: new Blob([body]), stdout: "pipe", stderr: "ignore" });
  const output = Buffer.from(await new Response(proc.stdout).arrayBuffer());
  await proc.exited;
  const split = output.indexOf("\r\n\r\n");
  const head = output.subarray(0, split).toString();
  const headers = new Headers();
  let status = 200;
  for (const line of head.split("\r\n")) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
    else headers.append(name, value);
  }
  return new Response(output.subarray(split + 4), { status, headers });
}

/** An HTTP server that redirects every request to the same path under `target` (scheme://host:port). */
export function redirectingServer(target: string): TestServer & { seen: SeenRequest[] } {
  const seen: SeenRequest[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      seen.push({ path: url.pathname, authorization: request.headers.get("authorization") });
      return Response.redirect(`${target}${url.pathname}${url.search}`, 302);
    },
  });
  return { port: server.port!, seen, stop: () => void server.stop(true) };
}
