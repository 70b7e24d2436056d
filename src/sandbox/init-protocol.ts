/**
 * What the wrapper and the sandbox init (sandbox-init.ts, inside the Linux sandbox)
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
   * Binds whose source the wrapper looked at before bwrap resolved its path (platform/sandbox.ts
   * keptInPlace): each target, inside, must be that very entry (`device:inode`), or nothing starts.
   */
  pinned: { path: string; identity: string }[];
  /** Pipes: the init's descriptors holding the daemon's fds 0–2, handed to the workload. */
  stdio: [number, number, number] | null;
}

export type SandboxReport =
  | { type: "spawned"; pid: number; startTicks: number }
  | { type: "failed"; code: number; message: string }
  | { type: "exited"; code: number | null; signal: string | number | null };
