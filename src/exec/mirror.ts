import { lazyOs } from "../platform/lazy.ts";
import { disableCoreDumps } from "../platform/libc.ts";

const CORE_SIGNALS = new Set(["SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGSYS", "SIGXCPU", "SIGXFSZ"]);

/** True for a signal name this platform knows ("SIGTERM"); never a number. */
export function isSignalName(name: string): name is NodeJS.Signals {
  return /^SIG[A-Z0-9]+$/.test(name) && signalNumber(name) !== undefined;
}

/** Signal number for a name, or undefined for an unknown name. */
export function signalNumber(name: string): number | undefined {
  return (lazyOs().constants.signals as Record<string, number>)[name];
}

/**
 * Ends the wrapper the way the workload ended: the same exit code, or death by the same
 * signal with its default disposition; 128+n when re-raising does not kill us (e.g. as PID 1).
 */
export async function mirrorExit(code: number | null, signal: string | null): Promise<never> {
  if (signal === null) process.exit(code ?? 1);
  const number = signalNumber(signal) ?? 0;
  if (CORE_SIGNALS.has(signal)) disableCoreDumps();
  const name = signal as NodeJS.Signals;
  // Listening then unlistening restores the default action, also for SIGPIPE/SIGXFSZ that Bun ignores.
  const restore = () => {};
  process.on(name, restore);
  process.removeAllListeners(name);
  try {
    process.kill(process.pid, name);
  } catch {
    // Not deliverable to ourselves: fall through to the exit status.
  }
  await Bun.sleep(20);
  process.exit(128 + number);
}
