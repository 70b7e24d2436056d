/**
 * Where a call's time goes, for the bench (bench/breakdown.ts): with
 * PASEO_HOST_RUNTIME_TRACE=<absolute file> in the runtime's environment, each process appends
 * one JSON line to that file as it exits: its pid, argv[1], `performance.timeOrigin` (epoch
 * ms) and each mark as [name, ms since timeOrigin]. A wrapper that ends with `_exit` (a store it
 * must not touch again, exec/mirror.ts) runs no exit handler and writes none. Off (the variable unset, the daemon's
 * case), `mark()` is one comparison with null and nothing else runs: no listener, no file.
 * The workload never sees the variable (its env is the envelope's). Measurement only: no
 * behaviour depends on it, and no mark carries anything but a name and a time.
 */
const FILE = process.env.PASEO_HOST_RUNTIME_TRACE;
const marks: [string, number][] | null = FILE && FILE.startsWith("/") ? [["evaluated", performance.now()]] : null;

if (marks !== null) {
  process.on("exit", () => {
    marks.push(["exiting", performance.now()]);
    const line = { pid: process.pid, command: process.argv[2] ?? null, origin: performance.timeOrigin, marks };
    // Loaded here: a static node:fs import would cost every call at start-up (platform/lazy.ts).
    (require("node:fs") as typeof import("node:fs")).appendFileSync(FILE!, `${JSON.stringify(line)}\n`);
  });
}

/** Notes that the call reached `name` (a constant string), when tracing is on. */
export function mark(name: string): void {
  if (marks !== null) marks.push([name, performance.now()]);
}
