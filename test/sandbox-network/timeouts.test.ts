/**
 * A resolver or an upstream slower than the proxy waits for: the request fails with what took
 * too long, and a connection that answers after its timeout is closed, never left open.
 */
import { afterAll, expect, test } from "bun:test";
import net from "node:net";
import { admit } from "../../src/sandbox/network/admission.ts";
import { compileAllowlist } from "../../src/sandbox/network/allowlist.ts";
import type { Conn } from "../../src/sandbox/network/conn.ts";
import { parseIp } from "../../src/sandbox/network/ip.ts";
import { connectFirst, systemConnector } from "../../src/sandbox/network/upstream.ts";
import { until } from "../support/poll.ts";

const open = new Set<net.Socket>();
let accepted = 0;
const server = net.createServer((socket) => {
  accepted++;
  open.add(socket);
  socket.on("close", () => open.delete(socket));
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const PORT = (server.address() as net.AddressInfo).port;
afterAll(async () => {
  for (const socket of open) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test("a name not resolved within resolveTimeoutMs fails, saying so", async () => {
  let answer: (addresses: { address: string }[]) => void = () => {};
  const slow = new Promise<{ address: string }[]>((resolve) => (answer = resolve));
  const admission = await admit({ allowlist: compileAllowlist(["slow.test"]), resolve: () => slow, resolveTimeoutMs: 20 }, { host: { kind: "name", name: "slow.test" }, port: 443 });
  answer([{ address: "127.0.0.1" }]);
  expect(admission).toEqual({ ok: false, kind: "failed", address: null, reason: "resolving slow.test took longer than 20 ms" });
});

test("an upstream that answers after connectTimeoutMs: ETIMEDOUT, and the late connection is closed", async () => {
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  let late: Conn | undefined;
  const connector = async (address: string, port: number) => {
    const conn = await systemConnector(address, port);
    await gate;
    late = conn;
    return conn;
  };
  const attempt = await connectFirst(connector, [parseIp("127.0.0.1")!], PORT, 20);
  expect(attempt).toMatchObject({ ok: false, address: "127.0.0.1", reason: `cannot connect to 127.0.0.1 port ${PORT} (ETIMEDOUT)` });
  release();
  await until("the late connection", () => late);
  await until("the late connection closed", () => late!.closed);
  await until("the server to see it closed", () => accepted === 1 && open.size === 0);
});
