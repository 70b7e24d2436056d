/**
 * Keepalives for a `--remote` caller: proof of progress while a remote command works. The
 * caller (src/remote/ssh.ts) ends a remote call that sends nothing for remote.idleTimeoutSeconds;
 * a slow step (a git clone, a large copy) sends nothing of its own for minutes, so the runtime
 * on the remote host writes one NUL byte on stdout every KEEPALIVE_ENV milliseconds while it
 * works, and the caller drops them (no JSON answer holds a raw NUL). They come from the event
 * loop, so a process that is stopped, or blocked in a hung disk or NFS home, sends none; a long
 * synchronous loop (copyTree) calls `pulse()` itself.
 *
 * Only a `--remote` caller sets the variable, on the commands whose stdout it reads whole.
 * Never on `exec-remote`: its stdout is the multiplex, which has keepalive frames of its own.
 */
import { diagnose, writeAll } from "./output.ts";
import { hasErrno, PEER_GONE } from "./platform/errno.ts";

/** Set (to an interval in milliseconds) by a `--remote` caller on a remote command. */
export const KEEPALIVE_ENV = "PASEO_HOST_RUNTIME_KEEPALIVE_MS";

const NUL = new Uint8Array(1);
let intervalMs = 0;
let last = 0;
let lost = false;

/**
 * Starts the keepalives when the caller asked for them. The variable is removed at once, so
 * nothing this process starts (git, a workload, another runtime) inherits it.
 */
export function startKeepalive(env: NodeJS.ProcessEnv = process.env): void {
  const asked = env[KEEPALIVE_ENV];
  if (asked === undefined) return;
  delete env[KEEPALIVE_ENV];
  const ms = Number(asked);
  if (!Number.isInteger(ms) || ms < 100 || ms > 60_000) return;
  intervalMs = ms;
  last = performance.now();
  // Looked at twice per interval: a timer that fires a little early does not skip a pulse.
  setInterval(pulseFromTimer, ms / 2).unref();
}

/**
 * The timer's pulse. A stdout that fails otherwise than by the caller leaving (ENOSPC, EIO)
 * ends the keepalives and is said on stderr: thrown from a timer it would end the call at any
 * point of its work; the call's own answer meets the same stdout and reports it there.
 */
function pulseFromTimer(): void {
  try {
    pulse();
  } catch (error) {
    intervalMs = 0;
    diagnose(`keepalives stopped: stdout failed (${(error as Error).message})`);
  }
}

/** One keepalive when one is due (cheap enough for every entry of a long loop). */
export function pulse(): void {
  if (intervalMs === 0) return;
  const now = performance.now();
  if (now - last < intervalMs) return;
  last = now;
  try {
    writeAll(1, NUL);
  } catch (error) {
    if (!hasErrno(error, PEER_GONE)) throw error;
    // The caller went away: nothing listens for keepalives any more.
    intervalMs = 0;
    lost = true;
  }
}

/**
 * Whether the caller is gone (a keepalive could not be written): a command that would otherwise
 * wait forever for something to print (`logs --follow`) ends then, rather than outlive its session.
 */
export function callerLost(): boolean {
  return lost;
}
