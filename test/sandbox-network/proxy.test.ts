/**
 * The policy proxy in process, on a Unix socket, against servers on loopback: what it lets
 * through (HTTP forward, CONNECT, SOCKS5, by name and by address) and what it refuses, each
 * refusal answered properly, reported, and decided before any connection is attempted.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { systemResolver } from "../../src/sandbox/network/admission.ts";
import { until } from "../support/poll.ts";
import { exchange, portBytes, readBytes, socksConnect, socksDomainRequest, socksIpv4Request, startEchoHeadServer, startEchoServer, startTestProxy, connectTo, type TestProxy } from "./support.ts";

const web = startEchoHeadServer();
const echo = await startEchoServer();
const WEB = web.port!;
let kit: TestProxy;

afterAll(async () => {
  web.stop(true);
  await echo.close();
});
afterEach(async () => {
  await kit?.close();
  expect(kit.errors).toEqual([]);
});

function statusOf(response: Buffer): string {
  return response.toString("latin1").split("\r\n")[0]!;
}

function bodyOf(response: Buffer): string {
  const text = response.toString("latin1");
  return text.slice(text.indexOf("\r\n\r\n") + 4);
}

describe("allowed", () => {
  test("plain HTTP by name: origin-form upstream, Host from the URI, Proxy-* and hop-by-hop headers dropped, counted", async () => {
    kit = await startTestProxy([`allowed.test:${WEB}`, `127.0.0.1:${WEB}`], { "allowed.test": ["127.0.0.1"] });
    const response = await exchange(
      kit.socketPath,
      `GET http://Allowed.Test:${WEB}/hello?x=1 HTTP/1.1\r\nHost: wrong.example\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic c2VjcmV0\r\nKeep-Alive: 5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nX-Kept: yes\r\n\r\n`,
    );
    expect(statusOf(response)).toBe("HTTP/1.1 200 OK");
    const seen = bodyOf(response).split("\n");
    expect(seen[0]).toBe("GET /hello?x=1");
    expect(seen).toContain(`host: Allowed.Test:${WEB}`);
    expect(seen).toContain("x-kept: yes");
    expect(seen).toContain("connection: close");
    expect(seen.filter((line) => /^(proxy-|keep-alive|x-hop)/.test(line))).toEqual([]);
    expect(kit.attempts).toEqual([`127.0.0.1:${WEB}`]);
    await until("the connection's report", () => kit.connections.length === 1);
    expect(kit.connections[0]).toMatchObject({ protocol: "http", host: `Allowed.Test:${WEB}`, port: WEB, address: "127.0.0.1" });
    expect(kit.connections[0]!.bytesIn).toBe(response.length);
    // The rewritten head the upstream got counts as sent to it.
    expect(kit.connections[0]!.bytesOut).toBeGreaterThan(`GET /hello?x=1 HTTP/1.1\r\nhost: Allowed.Test:${WEB}\r\n\r\n`.length);
    expect(kit.proxy.stats().get(`Allowed.Test:${WEB}`)).toEqual({ connections: 1, bytesIn: response.length, bytesOut: kit.connections[0]!.bytesOut });
  });

  test("plain HTTP by address, with a body, the client half-closing after it", async () => {
    kit = await startTestProxy([`127.0.0.1:${WEB}`]);
    const response = await exchange(kit.socketPath, `POST http://127.0.0.1:${WEB}/p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello`);
    expect(statusOf(response)).toBe("HTTP/1.1 200 OK");
    expect(bodyOf(response)).toStartWith("POST /p");
    expect(kit.lookups).toEqual([]);
  });

  test("the system resolver by default: localhost from /etc/hosts", async () => {
    expect((await systemResolver("localhost")).map(({ address }) => address)).toContain("127.0.0.1");
    kit = await startTestProxy([`localhost:${WEB}`, `127.0.0.1:${WEB}`], {}, { resolve: systemResolver });
    const response = await exchange(kit.socketPath, `GET http://localhost:${WEB}/ HTTP/1.1\r\n\r\n`);
    expect(statusOf(response)).toBe("HTTP/1.1 200 OK");
  });

  test("CONNECT: a blind byte pipe both ways, bytes sent with the request included", async () => {
    kit = await startTestProxy([`tunnel.test:${echo.port}`, `127.0.0.1:${echo.port}`], { "tunnel.test": ["127.0.0.1"] });
    const socket = await connectTo(kit.socketPath);
    socket.write(`CONNECT tunnel.test:${echo.port} HTTP/1.1\r\nHost: tunnel.test:${echo.port}\r\n\r\nearly`);
    const answer = (await readBytes(socket, 39 + 5)).toString("latin1");
    expect(answer).toBe("HTTP/1.1 200 Connection established\r\n\r\nearly");
    socket.write(Buffer.from("\x00\xffbinary\r\n\r\n", "latin1"));
    expect((await readBytes(socket, 12)).toString("latin1")).toBe("\x00\xffbinary\r\n\r\n");
    socket.end();
    await new Promise((resolve) => socket.once("close", resolve));
    await until("the tunnel's report", () => kit.connections.length === 1);
    expect(kit.connections[0]).toMatchObject({ protocol: "connect", host: `tunnel.test:${echo.port}`, bytesOut: 17, bytesIn: 17 });
  });

  test("SOCKS5 by domain and by IPv4 address", async () => {
    kit = await startTestProxy([`socks.test:${echo.port}`, `127.0.0.1:${echo.port}`], { "socks.test": ["127.0.0.1"] });
    for (const request of [socksDomainRequest("socks.test", echo.port), socksIpv4Request("127.0.0.1", echo.port)]) {
      const { method, reply, socket } = await socksConnect(kit.socketPath, request);
      expect([...method]).toEqual([5, 0]);
      expect([...reply]).toEqual([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
      socket.write("ping");
      expect((await readBytes(socket, 4)).toString()).toBe("ping");
      socket.destroy();
    }
    expect(kit.attempts).toEqual([`127.0.0.1:${echo.port}`, `127.0.0.1:${echo.port}`]);
    expect(kit.lookups).toEqual(["socks.test"]);
  });

  test("SOCKS5 by IPv6 address: the mapped form of an allowed IPv4 address is that address", async () => {
    kit = await startTestProxy([`127.0.0.1:${echo.port}`]);
    const mapped = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]);
    const { reply, socket } = await socksConnect(kit.socketPath, Buffer.concat([Buffer.from([5, 1, 0, 4]), mapped, portBytes(echo.port)]));
    expect(reply[1]).toBe(0);
    socket.write("v6");
    expect((await readBytes(socket, 2)).toString()).toBe("v6");
    socket.destroy();
    expect(kit.attempts).toEqual([`127.0.0.1:${echo.port}`]);
  });
});

describe("refused before any connection is attempted", () => {
  // [name, what it resolves to, what the refusal says]
  const BY_ADDRESS: [string, string[], string][] = [
    ["loopback.test", ["127.0.0.1"], "loopback"],
    ["metadata.test", ["169.254.169.254"], "cloud metadata endpoint"],
    ["mapped-metadata.test", ["::ffff:169.254.169.254"], "cloud metadata endpoint"],
    ["private.test", ["10.1.2.3"], "private network"],
    ["multicast.test", ["224.0.0.251"], "multicast"],
    ["ula.test", ["fd00::1"], "unique-local"],
    // A public answer beside a private one: the whole name is refused, the public one never tried.
    ["mixed.test", ["93.184.216.34", "192.168.1.1"], "192.168.1.1: a private network"],
  ];
  for (const [name, addresses, says] of BY_ADDRESS) {
    test(`an allowed name resolving to ${addresses.join(", ")}: 403, reported, no connection`, async () => {
      kit = await startTestProxy([name, `${name}:${WEB}`], { [name]: addresses });
      const response = await exchange(kit.socketPath, `GET http://${name}:${WEB}/ HTTP/1.1\r\n\r\n`);
      expect(statusOf(response)).toBe("HTTP/1.1 403 Forbidden");
      expect(bodyOf(response)).toContain(says);
      expect(kit.denied).toHaveLength(1);
      expect(kit.denied[0]).toMatchObject({ protocol: "http", host: `${name}:${WEB}`, port: WEB });
      expect(kit.denied[0]!.reason).toContain(says);
      expect(kit.attempts).toEqual([]);
    });
  }

  test("over CONNECT and SOCKS5 alike: 403 and reply 0x02", async () => {
    kit = await startTestProxy(["metadata.test"], { "metadata.test": ["169.254.169.254"] });
    expect(statusOf(await exchange(kit.socketPath, "CONNECT metadata.test:443 HTTP/1.1\r\n\r\n"))).toBe("HTTP/1.1 403 Forbidden");
    const { reply, socket } = await socksConnect(kit.socketPath, socksDomainRequest("metadata.test", 443));
    expect(reply[1]).toBe(2);
    socket.destroy();
    expect(kit.denied.map((event) => [event.protocol, event.address])).toEqual([["connect", "169.254.169.254"], ["socks5", "169.254.169.254"]]);
    expect(kit.attempts).toEqual([]);
  });

  test("SOCKS5 by an IPv6 address not listed: reply 0x02, reported with the address in canonical text", async () => {
    kit = await startTestProxy(["allowed.test"]);
    const address = Buffer.from([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    const { reply, socket } = await socksConnect(kit.socketPath, Buffer.concat([Buffer.from([5, 1, 0, 4]), address, portBytes(443)]));
    expect(reply[1]).toBe(2);
    socket.destroy();
    expect(kit.denied).toHaveLength(1);
    expect(kit.denied[0]).toMatchObject({ protocol: "socks5", host: "fd00::1", port: 443, reason: "address fd00::1 port 443 is not on the allowlist" });
    expect(kit.attempts).toEqual([]);
  });

  test("a host not on the list is refused without even being resolved", async () => {
    kit = await startTestProxy(["allowed.test"], { "other.test": ["127.0.0.1"] });
    const response = await exchange(kit.socketPath, "GET http://other.test/ HTTP/1.1\r\n\r\n");
    expect(statusOf(response)).toBe("HTTP/1.1 403 Forbidden");
    expect(bodyOf(response)).toBe("paseo network policy: host other.test is not on the allowlist\n");
    expect(kit.lookups).toEqual([]);
    expect(kit.attempts).toEqual([]);
  });

  test("a port not on the list is refused, saying so", async () => {
    kit = await startTestProxy(["allowed.test"], { "allowed.test": ["127.0.0.1"] });
    const response = await exchange(kit.socketPath, `CONNECT allowed.test:${echo.port} HTTP/1.1\r\n\r\n`);
    expect(bodyOf(response)).toBe(`paseo network policy: port ${echo.port} is not allowed for allowed.test\n`);
    expect(kit.attempts).toEqual([]);
  });

  test("an address not on the list, and a listed loopback name without its address entry", async () => {
    kit = await startTestProxy([`named.test:${WEB}`], { "named.test": ["127.0.0.1"] });
    expect(bodyOf(await exchange(kit.socketPath, `GET http://127.0.0.1:${WEB}/ HTTP/1.1\r\n\r\n`))).toContain(`address 127.0.0.1 port ${WEB} is not on the allowlist`);
    expect(bodyOf(await exchange(kit.socketPath, `GET http://named.test:${WEB}/ HTTP/1.1\r\n\r\n`))).toContain("127.0.0.1: loopback (127.0.0.0/8) is not reachable");
    expect(kit.attempts).toEqual([]);
  });

  test("numeric spellings of loopback in any protocol are not hosts at all", async () => {
    kit = await startTestProxy(["0.0.0.0/0", "*.test"], {});
    for (const host of ["127.1", "0x7f.1", "2130706433", "0177.0.0.1"]) {
      expect(statusOf(await exchange(kit.socketPath, `GET http://${host}:${WEB}/ HTTP/1.1\r\n\r\n`))).toBe("HTTP/1.1 400 Bad Request");
      const { reply, socket } = await socksConnect(kit.socketPath, socksDomainRequest(host, WEB));
      expect(reply[1]).toBe(1);
      socket.destroy();
    }
    // A bracketed mapped loopback is the loopback address, and 0.0.0.0/0 does not open it.
    expect(bodyOf(await exchange(kit.socketPath, `CONNECT [::ffff:7f00:1]:443 HTTP/1.1\r\n\r\n`))).toContain("127.0.0.1: loopback");
    expect(kit.lookups).toEqual([]);
    expect(kit.attempts).toEqual([]);
  });
});

describe("failures are answered and reported, not silent", () => {
  test("a name that does not resolve: 502, onFailure", async () => {
    kit = await startTestProxy(["missing.test"], {});
    const response = await exchange(kit.socketPath, "GET http://missing.test/ HTTP/1.1\r\n\r\n");
    expect(statusOf(response)).toBe("HTTP/1.1 502 Bad Gateway");
    expect(kit.failures[0]!.reason).toBe("cannot resolve missing.test (ENOTFOUND)");
  });

  test("nothing listening: 502 over HTTP, reply 0x05 over SOCKS5", async () => {
    const closed = await startEchoServer();
    const port = closed.port;
    await closed.close();
    kit = await startTestProxy([`127.0.0.1:${port}`]);
    expect(bodyOf(await exchange(kit.socketPath, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`))).toContain("ECONNREFUSED");
    const { reply, socket } = await socksConnect(kit.socketPath, socksIpv4Request("127.0.0.1", port));
    expect(reply[1]).toBe(5);
    socket.destroy();
    expect(kit.failures).toHaveLength(2);
  });
});

describe("malformed and oversized requests", () => {
  const BAD: [string, string][] = [
    ["garbage\r\n\r\n", "not an HTTP/1 request line"],
    ["GET / HTTP/1.1\r\nHost: x\r\n\r\n", "not a proxy request"],
    ["GET https://example.com/ HTTP/1.1\r\n\r\n", "https:// goes through CONNECT"],
    ["GET http://user:pw@allowed.test/ HTTP/1.1\r\n\r\n", "credentials in a proxied URI"],
    ["CONNECT allowed.test HTTP/1.1\r\n\r\n", "CONNECT needs host:port"],
    ["GET http://allowed.test/ HTTP/1.1\r\nX: a\nY: b\r\n\r\n", "bare CR or LF"],
    ["GET http://allowed.test/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", "folded header lines"],
    ["GET http://allowed.test/ HTTP/2.0\r\n\r\n", "not an HTTP/1 request line"],
  ];
  for (const [request, says] of BAD) {
    test(`${JSON.stringify(request.split("\r\n")[0])}…: 400, ${says}`, async () => {
      kit = await startTestProxy(["allowed.test"], { "allowed.test": ["127.0.0.1"] });
      const response = await exchange(kit.socketPath, request);
      expect(statusOf(response)).toBe("HTTP/1.1 400 Bad Request");
      expect(bodyOf(response)).toContain(says);
      expect(kit.denied[0]!.reason).toContain(says);
      expect(kit.attempts).toEqual([]);
    });
  }

  test("a head over the bound: 431, and the proxy stops reading at the bound", async () => {
    kit = await startTestProxy(["allowed.test"], {}, { maxHeadBytes: 1024 });
    const response = await exchange(kit.socketPath, `GET http://allowed.test/ HTTP/1.1\r\nX: ${"a".repeat(4096)}\r\n\r\n`);
    expect(statusOf(response)).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(kit.denied[0]!.reason).toBe("request head larger than 1024 bytes");
  });

  test("a head exactly at the bound passes", async () => {
    kit = await startTestProxy([`127.0.0.1:${WEB}`], {}, { maxHeadBytes: 1024 });
    const start = `GET http://127.0.0.1:${WEB}/ HTTP/1.1\r\nX: `;
    const response = await exchange(kit.socketPath, `${start}${"a".repeat(1024 - start.length - 4)}\r\n\r\n`);
    expect(statusOf(response)).toBe("HTTP/1.1 200 OK");
  });

  test("SOCKS5: BIND and UDP ASSOCIATE are not supported (0x07), an unknown address type is 0x08, no no-auth method is 0xff", async () => {
    kit = await startTestProxy(["allowed.test"], {});
    for (const command of [2, 3]) {
      const { reply, socket } = await socksConnect(kit.socketPath, socksDomainRequest("allowed.test", 443, command));
      expect(reply[1]).toBe(7);
      socket.destroy();
    }
    const { reply, socket } = await socksConnect(kit.socketPath, Buffer.from([5, 1, 0, 9, 0, 0]));
    expect(reply[1]).toBe(8);
    socket.destroy();
    expect([...(await exchange(kit.socketPath, Buffer.from([5, 1, 2])))]).toEqual([5, 0xff]);
    expect(kit.denied.map((event) => event.reason)).toEqual([
      "SOCKS command 2 is not supported (only CONNECT)",
      "SOCKS command 3 is not supported (only CONNECT)",
      "SOCKS address type 9 is not supported",
      "SOCKS5 without the no-authentication method",
    ]);
  });
});

describe("on a loopback port (macOS: the port the Seatbelt profile allows)", () => {
  test("without a socket path it listens on a free port of 127.0.0.1, and decides the same way", async () => {
    kit = await startTestProxy([`127.0.0.1:${WEB}`], {}, { socketPath: null });
    const port = kit.proxy.port!;
    expect(kit.proxy.socketPath).toBeNull();
    expect(port).toBeGreaterThan(0);
    expect(statusOf(await exchange(port, `GET http://127.0.0.1:${WEB}/by-port HTTP/1.1\r\n\r\n`))).toBe("HTTP/1.1 200 OK");
    expect(statusOf(await exchange(port, `GET http://other.test/ HTTP/1.1\r\n\r\n`))).toBe("HTTP/1.1 403 Forbidden");
    expect(kit.denied.map((event) => event.host)).toEqual(["other.test"]);
  });
});

describe("clean shutdown", () => {
  test("close() ends the listener and every open connection", async () => {
    kit = await startTestProxy([`127.0.0.1:${echo.port}`]);
    const socket = await connectTo(kit.socketPath);
    socket.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\n\r\n`);
    await readBytes(socket, 39);
    const idle = await connectTo(kit.socketPath);
    const ended = [socket, idle].map((s) => new Promise((resolve) => s.once("end", resolve)));
    await kit.proxy.close();
    await Promise.all(ended);
    socket.destroy();
    idle.destroy();
    expect(existsSync(kit.socketPath)).toBe(false);
  });
});
