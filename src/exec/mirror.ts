import { disableCoreDumps, exitImmediately } from "../platform/libc/exit.ts";
import { tolerating } from "../platform/errno.ts";
import { signalNumber } from "../platform/signals.ts";

const CORE_SIGNALS = new Set(["SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGSYS", "SIGXCPU", "SIGXFSZ"]);

/**
 * Ends the wrapper the way the workload ended: the same exit code, or death by the same
 * signal with its default disposition; 128+n when re-raising does not kill us (e.g. as PID 1,
 * or SIGPWR, which the JavaScript engine handles itself). A death by a signal without a name
 * arrives here as its exit code 128+n already (protocol/signal.ts). With `storeAbandoned` (the
 * store became unwritable while the workload ran) it exits at once: Bun's own exit would close
 * the store and die of SIGBUS doing it.
 */
export async function mirrorExit(code: number | null, signal: string | null, storeAbandoned = false): Promise<never> {
  const exit: (status: number) => never = storeAbandoned ? exitImmediately : (status) => process.exit(status);
  if (signal === null) exit(code ?? 1);
  const number = signalNumber(signal) ?? 0;
  if (CORE_SIGNALS.has(signal)) disableCoreDumps();
  const name = signal as NodeJS.Signals;
  // Listening then unlistening restores the default action, also for SIGPIPE/SIGXFSZ that Bun ignores.
  const restore = () => {};
  process.on(name, restore);
  process.removeAllListeners(name);
  // By number: Bun's process.kill does not know every name of the table (SIGSTKFLT, SIGPWR).
  // A number this kernel does not have (EINVAL): the exit status below says it instead.
  tolerating(["EINVAL"], undefined, () => process.kill(process.pid, number));
  await Bun.sleep(20);
  return exit(128 + number);
}
