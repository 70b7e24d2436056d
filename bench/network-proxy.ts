/**
 * Throughput through the network policy (forwarder on loopback → the proxy's Unix socket →
 * CONNECT → a loopback server) against a direct loopback connection to the same server, in
 * the same run, the order rotating every run, median of the runs. Issue 32's aim: at least 0.8×.
 *
 * Every party runs in a process of its own, as in production (workloads/relay-party.ts). With
 * socat installed, the same two hops made by socat (C, read/write with 256 KiB buffers) are
 * measured in the same rounds: what any user-space relay of two hops reaches on this machine.
 *
 * A figure of bench/run.ts's network family (network.ts); `bun bench/network-proxy.ts [--quick]`
 * alone prints its own line. Loopback only.
 */
import net from "node:net";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "../kit/ports.ts";
import { cleanupAll, onCleanup, tempDir } from "./procs.ts";
import { median } from "./stats.ts";

const MiB = 2 ** 20;
const PARTY = join(import.meta.dir, "workloads", "relay-party.ts");
const CONNECTED = "HTTP/1.1 200 Connection established\r\n\r\n";

/** `child`, remembered for the finally below and for the bench's cleanup (run.ts's signal handler runs cleanupAll(), never that finally). */
function spawned<T extends Subprocess>(child: T, processes: Subprocess[]): T {
  processes.push(child);
  onCleanup(() => child.kill());
  return child;
}

/** Starts `argv` and waits for its first line of output (its port, or "ready"). */
async function started(argv: string[], processes: Subprocess[]): Promise<string> {
  const child = spawned(Bun.spawn(argv, { stdout: "pipe", stderr: "inherit" }), processes);
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${argv.join(" ")} ended before it was ready`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text.trim();
}

/** MiB/s from the first byte to the end, after `request` (and `skip` bytes of answer) on a connection to `port`. */
function drained(port: number, expected: number, request = "", skip = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    if (request) socket.write(request);
    let received = -skip;
    let first = 0;
    socket.on("data", (chunk: Buffer) => {
      if (first === 0) first = performance.now();
      received += chunk.length;
    });
    socket.on("error", reject);
    socket.on("end", () => {
      socket.destroy();
      if (received !== expected) return reject(new Error(`received ${received} of ${expected} bytes`));
      resolve(expected / MiB / ((performance.now() - first) / 1000));
    });
  });
}

/**
 * socat's two hops (loopback port → Unix socket → the server), or null without socat. Its
 * stderr is dropped: its forked children complain of a broken pipe when killed at the end; a
 * relay that fails shows as a short transfer instead.
 */
async function socatRelay(dir: string, sourcePort: number, processes: Subprocess[]): Promise<number | null> {
  const socat = Bun.which("socat");
  if (!socat) return null;
  const socket = join(dir, "socat.sock");
  spawned(Bun.spawn([socat, "-b", "262144", `UNIX-LISTEN:${socket},fork`, `TCP:127.0.0.1:${sourcePort}`], { stderr: "ignore" }), processes);
  // Free, so the probe below cannot reach a stranger.
  const port = await freePort();
  spawned(Bun.spawn([socat, "-b", "262144", `TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`, `UNIX-CONNECT:${socket}`], { stderr: "ignore" }), processes);
  for (let i = 0; i < 50 && !(await listening(port)); i++) await Bun.sleep(20);
  return port;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect({ host: "127.0.0.1", port });
    probe.once("connect", () => (probe.destroy(), resolve(true)));
    probe.once("error", () => resolve(false));
  });
}

export async function networkProxyThroughput(bytes: number, runs: number) {
  const dir = tempDir("paseo-bench-proxy-");
  const processes: Subprocess[] = [];
  const bun = process.execPath;
  try {
    const source = Number(await started([bun, PARTY, "source", String(bytes)], processes));
    await started([bun, PARTY, "proxy", join(dir, "proxy.sock"), String(source)], processes);
    const forwarder = Number(await started([bun, PARTY, "forwarder", join(dir, "proxy.sock")], processes));
    const socat = await socatRelay(dir, source, processes);
    const ours: number[] = [];
    const baseline: number[] = [];
    const native: number[] = [];
    const parties: (() => Promise<void>)[] = [
      async () => void baseline.push(await drained(source, bytes)),
      async () => void ours.push(await drained(forwarder, bytes, `CONNECT 127.0.0.1:${source} HTTP/1.1\r\n\r\n`, CONNECTED.length)),
    ];
    if (socat !== null) parties.push(async () => void native.push(await drained(socat, bytes)));
    // The order rotates every run (as signals.ts compare() does), so none always goes first on a colder machine.
    for (let run = 0; run < runs; run++) {
      for (let k = 0; k < parties.length; k++) await parties[(run + k) % parties.length]!();
    }
    const nativeMiBps = socat === null ? null : median(native);
    return { bytes, runs, proxiedMiBps: median(ours), directMiBps: median(baseline), ratio: median(ours) / median(baseline), nativeMiBps, nativeRatio: nativeMiBps === null ? null : nativeMiBps / median(baseline) };
  } finally {
    for (const child of processes) child.kill();
    await Promise.all(processes.map((child) => child.exited));
  }
}

if (import.meta.main) {
  const quick = process.argv.includes("--quick");
  const result = await networkProxyThroughput((quick ? 128 : 512) * MiB, quick ? 3 : 7).finally(cleanupAll);
  const verdict = result.ratio >= 0.8 ? "ok" : "FAR";
  const native = result.nativeMiBps === null ? "socat not installed" : `socat's two hops ${result.nativeMiBps.toFixed(0)} MiB/s, ${result.nativeRatio!.toFixed(2)}x`;
  console.log(`network proxy throughput: ${result.proxiedMiBps.toFixed(0)} MiB/s through forwarder+proxy, ${result.directMiBps.toFixed(0)} MiB/s direct, ratio ${result.ratio.toFixed(2)}x (aim ≥ 0.8x: ${verdict}); ${native}; ${result.runs} runs of ${result.bytes / MiB} MiB, median`);
}
