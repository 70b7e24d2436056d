/**
 * The whole way out as a workload sees it: a loopback port (the forwarder) → the proxy's Unix
 * socket → a loopback server. curl through the proxy variables, TLS end to end through
 * CONNECT, and the variables themselves.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";
import tls from "node:tls";
import { startForwarder, type Forwarder } from "../../src/sandbox/network/forwarder.ts";
import { proxyEnvironment } from "../../src/sandbox/network/proxy-env.ts";
import { connectTo, readBytes, startEchoHeadServer, startTestProxy, type TestProxy } from "./support.ts";

const CURL = Bun.which("curl");
const OPENSSL = Bun.which("openssl");
if (!CURL) console.log("skipping the curl tests: curl is not installed");
if (!OPENSSL) console.log("skipping the TLS test: openssl is not installed (needed to make a certificate)");

let kit: TestProxy;
let forwarder: Forwarder | undefined;
const web = startEchoHeadServer();
afterAll(() => web.stop(true));
afterEach(async () => {
  await forwarder?.close();
  forwarder = undefined;
  if (kit) {
    await kit.close();
    expect(kit.errors).toEqual([]);
  }
});

async function curl(args: string[], env: Record<string, string>) {
  const child = Bun.spawn([CURL!, "--silent", "--show-error", "--max-time", "20", ...args], { env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, code };
}

test("the variables point every protocol at the one loopback port, loopback itself excepted", () => {
  expect(proxyEnvironment(3128)).toEqual({
    HTTP_PROXY: "http://127.0.0.1:3128",
    HTTPS_PROXY: "http://127.0.0.1:3128",
    http_proxy: "http://127.0.0.1:3128",
    https_proxy: "http://127.0.0.1:3128",
    ALL_PROXY: "socks5h://127.0.0.1:3128",
    all_proxy: "socks5h://127.0.0.1:3128",
    NO_PROXY: "localhost,127.0.0.1,::1",
    no_proxy: "localhost,127.0.0.1,::1",
    NODE_USE_ENV_PROXY: "1",
  });
});

test("the forwarder listens on loopback only and carries bytes both ways to the socket", async () => {
  kit = await startTestProxy([`127.0.0.1:${web.port}`]);
  forwarder = await startForwarder({ socketPath: kit.socketPath, port: 0 });
  expect(forwarder.hosts[0]).toBe("127.0.0.1");
  expect(forwarder.hosts.every((host) => host === "127.0.0.1" || host === "::1")).toBe(true);
  for (const host of forwarder.hosts) {
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect({ host, port: forwarder!.port });
      s.once("connect", () => resolve(s));
      s.once("error", reject);
    });
    socket.write(`GET http://127.0.0.1:${web.port}/via-${host} HTTP/1.1\r\n\r\n`);
    const response = (await readBytes(socket, 1 << 20)).toString("latin1");
    expect(response).toStartWith("HTTP/1.1 200 OK");
    expect(response).toContain(`GET /via-${host}`);
    socket.destroy();
  }
});

test.skipIf(!CURL)("curl through the proxy variables: allowed by name over HTTP and SOCKS5, refused with the policy's reason", async () => {
  kit = await startTestProxy([`allowed.test:${web.port}`, `127.0.0.1:${web.port}`, "metadata.test"], { "allowed.test": ["127.0.0.1"], "metadata.test": ["169.254.169.254"] });
  forwarder = await startForwarder({ socketPath: kit.socketPath, port: 0 });
  const env = proxyEnvironment(forwarder.port);
  const http = await curl([`http://allowed.test:${web.port}/curl`], env);
  expect(http.stderr).toBe("");
  expect(http.stdout).toStartWith("GET /curl");
  expect(http.stdout).toContain(`host: allowed.test:${web.port}`);
  const socks = await curl(["--proxy", env.ALL_PROXY!, `http://allowed.test:${web.port}/socks`], {});
  expect(socks.stdout).toStartWith("GET /socks");
  const refused = await curl(["--write-out", "%{http_code}", `http://metadata.test/latest/meta-data/`], env);
  expect(refused.stdout).toBe("paseo network policy: 169.254.169.254: link-local (169.254.0.0/16, the cloud metadata endpoint) is not reachable unless an allow entry names it\n403");
  const socksRefused = await curl(["--proxy", env.ALL_PROXY!, "http://metadata.test/"], {});
  expect(socksRefused.code).not.toBe(0);
  expect(kit.attempts).toEqual([`127.0.0.1:${web.port}`, `127.0.0.1:${web.port}`]);
  expect(kit.denied.map((event) => event.protocol)).toEqual(["http", "socks5"]);
});

/** TLS end to end through CONNECT: the certificate is checked by the client, against the name it asked for. */
describe.skipIf(!OPENSSL)("TLS through CONNECT", () => {
  let dir = "";
  let server: tls.Server | undefined;
  let cert = "";
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "paseo-proxy-tls-"));
    const made = Bun.spawnSync([OPENSSL!, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=secure.test", "-addext", "subjectAltName=DNS:secure.test", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stderr: "pipe" });
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
    cert = readFileSync(join(dir, "cert.pem"), "utf8");
    server = tls.createServer({ key: readFileSync(join(dir, "key.pem")), cert }, (socket) => {
      socket.on("error", () => socket.destroy());
      socket.end("secret reply over TLS");
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  });
  afterAll(() => {
    server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("the handshake is end to end, the client verifies the certificate for the name it asked", async () => {
    const port = (server!.address() as net.AddressInfo).port;
    kit = await startTestProxy([`secure.test:${port}`, `127.0.0.1:${port}`], { "secure.test": ["127.0.0.1"] });
    const raw = await connectTo(kit.socketPath);
    raw.write(`CONNECT secure.test:${port} HTTP/1.1\r\n\r\n`);
    expect((await readBytes(raw, 39)).toString()).toBe("HTTP/1.1 200 Connection established\r\n\r\n");
    const secure = tls.connect({ socket: raw, servername: "secure.test", ca: cert });
    let plaintext = "";
    secure.on("data", (chunk: Buffer) => (plaintext += chunk));
    await new Promise((resolve, reject) => {
      secure.once("end", resolve);
      secure.once("error", reject);
    });
    expect(secure.authorized).toBe(true);
    expect(plaintext).toBe("secret reply over TLS");
    secure.destroy();
  });
});
