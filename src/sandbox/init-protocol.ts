/**
 * What the wrapper and the sandbox init (init.ts, inside the Linux sandbox)
 * say to each other on the init's control socket, one JSON object per line:
 *
 *   wrapper → init  SandboxRequest            what to run, where, with which env
 *   init → wrapper  spawned | failed          the workload exists (its pid there, start time), or why not
 *   wrapper → init  recorded                  the wrapper has the workload's identity
 *   init → wrapper  exited                    the workload's exact end: code, or signal name (number without one)
 *   wrapper → init  release                   cleanup done; the init exits and the sandbox ends
 *
 * Until `recorded` arrives the init blocks in a read, so it cannot reap the workload: the
 * workload's pid stays the workload (alive or zombie) while the wrapper looks it up.
 */

/**
 * Descriptor numbers in bwrap (and in the sandbox init after it), set by the spawn's stdio
 * array. bwrap closes `root` once it is mounted and `init` once it is copied; only the
 * sandbox init inherits the others (stdin, stdout and stderr in pipes mode only).
 */
export const SANDBOX_FDS = { control: 3, root: 4, init: 5, stdin: 6, stdout: 7, stderr: 8 } as const;

/** Where the sandbox init's script is, inside the sandbox (bwrap copies it from SANDBOX_FDS.init). */
export const SANDBOX_INIT_PATH = "/.paseo-sandbox-init.ts";

/** The workload, as the wrapper resolved and checked it. */
export interface SandboxRequest {
  type: "run";
  mode: "pipes" | "pty";
  program: string;
  argv: string[];
  env: Record<string, string>;
  /** The checked working directory: its path (the same inside) and its `device:inode`. */
  cwd: string;
  cwdIdentity: string;
  /**
   * Binds whose source the wrapper looked at before bwrap resolved its path (mount-plan.ts
   * keptInPlace): each target, inside, must be that very entry (`device:inode`), or nothing starts.
   */
  pinned: { path: string; identity: string }[];
  /** Pipes: the init's descriptors holding the daemon's fds 0–2, handed to the workload. */
  stdio: [number, number, number] | null;
  /** Under a network allowlist: the loopback port the init forwards to the proxy's socket as shown inside (both: network/egress-plan.ts; the forwarding: network/forwarder.ts), before the workload starts. */
  egress: { port: number; socket: string } | null;
}

export type SandboxReport =
  | { type: "spawned"; pid: number; startTicks: number }
  | { type: "failed"; code: number; message: string }
  | { type: "exited"; code: number | null; signal: string | number | null };
