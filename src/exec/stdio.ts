import { closeSync, openSync } from "node:fs";
import { releaseStderr } from "../output.ts";
import { dup2 } from "../platform/libc/descriptors.ts";

/**
 * Points the wrapper's fd 0/1/2 at /dev/null once the workload owns the real ones, so the
 * daemon sees EOF exactly when the workload closes them, and no later open reuses 0–2.
 * Diagnostics from then on go to the runtime log only.
 */
export function releaseStdio(): void {
  releaseStderr();
  const devNull = openSync("/dev/null", "r+");
  for (const fd of [0, 1, 2]) dup2(devNull, fd);
  closeSync(devNull);
}
