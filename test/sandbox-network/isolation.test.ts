/**
 * Each connection through the proxy is on its own: a silent client is answered 408 at its own
 * deadline, a reader that stops reading holds its writer back (the proxy's queue stays about
 * one high-water mark), and neither delays anyone else.
 */
import { afterEach, expect, test } from "bun:test";
import net, { type Socket } from "node:net";
import { until } from "../support/poll.ts";
import { connectTo, exchange, readBytes, startEchoHeadServer, startTestProxy, type TestProxy } from "./support.ts";

let kit: TestProxy;
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await kit?.close();
  expect(kit.errors).toEqual([]);
});

/** A loopback server that writes `total` bytes to its first client as fast as backpressure lets it, counting what it handed over. */
async function startFirehose(total: number) {
  const state = { written: 0, finished: false };
  const sockets = new Set<Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => socket.destroy());
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pump = () => {
      while (state.written < total) {
        state.written += chunk.length;
        if (!socket.write(chunk)) return void socket.once("drain", pump);
      }
      state.finished = true;
      socket.end();
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { port: (server.address() as net.AddressInfo).port, state };
}

test("a reader that stops reading holds the writer back; the proxy queues a bounded amount; nothing is lost", async () => {
  const TOTAL = 64 * 1024 * 1024;
  const hose = await startFirehose(TOTAL);
  const web = startEchoHeadServer();
  cleanups.push(() => web.stop(true));
  kit = await startTestProxy([`127.0.0.1:${hose.port}`, `127.0.0.1:${web.port}`]);
  const slow = await connectTo(kit.socketPath);
  slow.write(`CONNECT 127.0.0.1:${hose.port} HTTP/1.1\r\n\r\n`);
  const answer = await readBytes(slow, 39);
  expect(answer.subarray(0, 39).toString()).toBe("HTTP/1.1 200 Connection established\r\n\r\n");
  // The slow reader reads nothing now: the firehose must stall well short of its total.
  await until("the firehose to stall", async () => {
    const before = hose.state.written;
    await Bun.sleep(200);
    return hose.state.written === before && hose.state.written > 0;
  });
  expect(hose.state.written).toBeLessThan(TOTAL / 4);
  // Meanwhile another client is served at once.
  const response = await exchange(kit.socketPath, `GET http://127.0.0.1:${web.port}/other HTTP/1.1\r\n\r\n`);
  expect(response.toString("latin1")).toStartWith("HTTP/1.1 200 OK");
  // Now read everything: all of it arrives.
  let received = answer.length - 39;
  slow.on("data", (chunk: Buffer) => (received += chunk.length));
  slow.resume();
  await new Promise((resolve) => slow.once("end", resolve));
  slow.destroy();
  expect(received).toBe(TOTAL);
  await until("the tunnel's report", () => kit.connections.find((event) => event.port === hose.port));
  const tunnel = kit.connections.find((event) => event.port === hose.port)!;
  expect(tunnel.bytesIn).toBe(TOTAL);
  // What the proxy ever held for this connection: about one socket high-water mark and one chunk, not the 64 MiB.
  expect(tunnel.peakQueued).toBeLessThan(1024 * 1024);
});

test("a client that never finishes its head gets 408 at its deadline; a silent SOCKS client is closed at its own", async () => {
  const web = startEchoHeadServer();
  cleanups.push(() => web.stop(true));
  kit = await startTestProxy([`127.0.0.1:${web.port}`], {}, { openingTimeoutMs: 1500 });
  const stalled = exchange(kit.socketPath, `GET http://127.0.0.1:${web.port}/ HTTP/1.1\r\nX-Partial: `);
  const silentSocks = await connectTo(kit.socketPath);
  silentSocks.write(Buffer.from([5, 1]));
  const silentClosed = new Promise((resolve) => silentSocks.once("end", resolve));
  expect((await stalled).toString("latin1")).toStartWith("HTTP/1.1 408 Request Timeout");
  await silentClosed;
  silentSocks.destroy();
  expect(kit.denied.map((event) => event.reason)).toEqual(["no complete request within 1500 ms", "no complete request within 1500 ms"]);
});

test("clients that never finish their heads hold nobody back: others are served while they wait", async () => {
  const web = startEchoHeadServer();
  cleanups.push(() => web.stop(true));
  // A deadline no run of this test reaches, so "still waiting" does not depend on how fast the five are served.
  kit = await startTestProxy([`127.0.0.1:${web.port}`], {}, { openingTimeoutMs: 3_600_000 });
  const stalled = await connectTo(kit.socketPath);
  stalled.write(`GET http://127.0.0.1:${web.port}/ HTTP/1.1\r\nX-Partial: `);
  const silentSocks = await connectTo(kit.socketPath);
  silentSocks.write(Buffer.from([5, 1]));
  cleanups.push(() => {
    stalled.destroy();
    silentSocks.destroy();
  });
  for (let i = 0; i < 5; i++) {
    const response = await exchange(kit.socketPath, `GET http://127.0.0.1:${web.port}/${i} HTTP/1.1\r\n\r\n`);
    expect(response.toString("latin1")).toStartWith("HTTP/1.1 200 OK");
  }
  // The five were served while the stalled ones were still waiting for their deadline.
  expect(kit.denied).toEqual([]);
});

test("no more than maxConnections clients at once: one more is refused and reported, and the next after one left is served", async () => {
  const web = startEchoHeadServer();
  cleanups.push(() => web.stop(true));
  kit = await startTestProxy([`127.0.0.1:${web.port}`], {}, { maxConnections: 3 });
  // Three clients hold their slots open: connected, nothing sent yet.
  const held = await Promise.all([1, 2, 3].map(() => connectTo(kit.socketPath)));
  cleanups.push(() => held.forEach((socket) => socket.destroy()));
  const fourth = await connectTo(kit.socketPath);
  const ended = new Promise((resolve) => {
    fourth.once("end", resolve);
    fourth.once("error", resolve);
  });
  fourth.resume();
  await ended;
  fourth.destroy();
  expect(kit.denied.map((event) => event.reason)).toEqual(["more than 3 connections at once"]);
  held[0]!.destroy();
  await until("the proxy to see a slot free", async () => {
    const answer = await exchange(kit.socketPath, `GET http://127.0.0.1:${web.port}/next HTTP/1.1\r\n\r\n`);
    return answer.toString("latin1").startsWith("HTTP/1.1 200 OK");
  });
});
