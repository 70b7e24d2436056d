/**
 * Fallback signal-latency workload when no C compiler is present: same output as sigstamp.c
 * ("ready <pid> <ns>", then "S <signo> <ns>" per SIGINT/SIGTERM/SIGHUP, CLOCK_MONOTONIC ns),
 * exits at EOF on stdin. Slower to react than the C program (the handler runs on Bun's event
 * loop), so figures measured with it overstate the latency; the report says which was used.
 */
import { writeSync } from "node:fs";
import { constants } from "node:os";
import { monotonicNs } from "../clock.ts";

const line = (text: string) => writeSync(1, `${text}\n`);

for (const name of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  const signo = constants.signals[name];
  process.on(name, () => line(`S ${signo} ${monotonicNs()}`));
}
line(`ready ${process.pid} ${monotonicNs()}`);
const reader = Bun.file(0).stream().getReader();
for (;;) {
  const { done } = await reader.read();
  if (done) process.exit(0);
}
