/** What a signal name is on this platform: the one table the wrapper, `signal` and cleanup share. */
import { lazyOs } from "./lazy.ts";

/** True for a signal name this platform knows ("SIGTERM"); never a number. */
export function isSignalName(name: string): name is NodeJS.Signals {
  return /^SIG[A-Z0-9]+$/.test(name) && (lazyOs().constants.signals as Record<string, number>)[name] !== undefined;
}

/** Signal number for a name, or undefined for an unknown name. */
export function signalNumber(name: string): number | undefined {
  return (lazyOs().constants.signals as Record<string, number>)[name];
}
