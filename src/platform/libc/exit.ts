/** How this process ends when it mirrors its workload's end (src/exec/mirror.ts). */
import { errno, ffi, libcFunction } from "./symbols.ts";

const exitCall = libcFunction("_exit", { args: ["i32"], returns: "void" });
const setrlimit = libcFunction("setrlimit", { args: ["i32", "ptr"], returns: "i32" });

/** RLIMIT_CORE: 4 on Linux, 4 on macOS too. */
const RLIMIT_CORE = 4;

/** _exit(2): ends this process at once, running no exit handler (Bun's closes every open database). */
export function exitImmediately(code: number): never {
  exitCall(code);
  throw new Error("_exit returned");
}

/** Sets RLIMIT_CORE to 0 so re-raising a core-dumping signal does not write a ~100 MiB core. */
export function disableCoreDumps(): void {
  const limits = new BigUint64Array([0n, 0n]);
  if (setrlimit(RLIMIT_CORE, ffi().ptr(limits)) < 0) throw new Error(`setrlimit(RLIMIT_CORE, 0) failed (errno ${errno()})`);
}
