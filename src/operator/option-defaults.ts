/**
 * The option defaults operator help quotes. flags.ts imports this as a Bun macro: it runs when
 * the binary is bundled, so the command table quotes options.ts's defaults without loading
 * options.ts and valibot into every call (~2 ms of `describe`'s start-up).
 */
import { DEFAULT_OWNER, DEFAULT_STOP_TIMEOUT_MS } from "../options.ts";

/** The defaults, as plain values. */
export function optionDefaults(): { owner: string; stopTimeoutMs: number } {
  return { owner: DEFAULT_OWNER, stopTimeoutMs: DEFAULT_STOP_TIMEOUT_MS };
}
