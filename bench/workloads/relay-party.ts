/**
 * One party of bench/network-proxy.ts in a process of its own, as in production (the proxy in
 * the exec's wrapper, the forwarder in the sandbox init, the server and the client elsewhere):
 *   source BYTES            a loopback server writing BYTES to each client, then its end
 *   proxy SOCKET PORT       the policy proxy on SOCKET, allowing 127.0.0.1:PORT
 *   forwarder SOCKET        a loopback port forwarded to SOCKET
 * Each prints one line when ready (its port, or "ready") and runs until killed.
 */
import { compileAllowlist } from "../../src/sandbox/network/allowlist.ts";
import { listenConns, type Conn } from "../../src/sandbox/network/conn.ts";
import { startForwarder } from "../../src/sandbox/network/forwarder.ts";
import { startPolicyProxy } from "../../src/sandbox/network/proxy.ts";

const [role, first, second] = process.argv.slice(2);

function serveSource(bytes: number): number {
  const chunk = Buffer.alloc(256 * 1024, 0x61);
  const pump = (conn: Conn, left: { bytes: number }) => {
    while (left.bytes > 0) {
      const piece = left.bytes >= chunk.length ? chunk : chunk.subarray(0, left.bytes);
      left.bytes -= piece.length;
      if (!conn.write(piece)) return conn.onDrain(() => pump(conn, left));
    }
    conn.end();
  };
  const listener = listenConns({ hostname: "127.0.0.1", port: 0 }, (conn) => {
    conn.read({ data: () => {}, end: () => {} });
    pump(conn, { bytes });
  });
  return listener.port;
}

if (role === "source") console.log(serveSource(Number(first)));
else if (role === "proxy") {
  await startPolicyProxy({ socketPath: first!, allowlist: compileAllowlist([`127.0.0.1:${second}`]) });
  console.log("ready");
} else if (role === "forwarder") console.log((await startForwarder({ socketPath: first!, port: 0 })).port);
else throw new Error(`relay-party: unknown role ${role}`);
