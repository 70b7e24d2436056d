/**
 * The least a wrapper written for this engine can be (issue 33's floors): compiled with the
 * release flags (bench/floor.ts), it spawns its arguments in a process group of their own,
 * forwards the three signals the daemon sends to that group, waits, and exits with the
 * workload's code. No store, no validation, no cgroup: what it holds and how fast it forwards is
 * the engine's part of ours, so the bench reports our wrapper against it as well as against the
 * workload run directly.
 */
const workload = Bun.spawn(process.argv.slice(2), { stdio: ["inherit", "inherit", "inherit"], detached: true });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => process.kill(-workload.pid, signal));
process.exit(await workload.exited);

export {};
