/**
 * One execution's containment, as everything that ends or holds an execution asks of it: the
 * wrapper's exit cleanup and its protocol failures, `signal`, `pause`, `destroy`, `reconcile`,
 * and the settling of a record whose wrapper died. Three implementations: the execution's
 * cgroup (cgroup-scope.ts), its proven process group and session (group-scope.ts), and, in the
 * wrapper, the sandbox around either (sandbox-scope.ts). executions.ts makes one from a record.
 */

/** What holds one execution's processes, and how they are signalled, held still and ended. */
export interface ExecutionScope {
  /**
   * `signal`: sends `signal` to every process of the execution and waits up to `timeoutMs`
   * until none is left; false when some still run.
   */
  signal(signal: NodeJS.Signals, timeoutMs: number): Promise<boolean>;
  /**
   * pause, destroy, reconcile, the exit cleanup: SIGTERM, `graceMs`, then SIGKILL until nothing
   * is left (graceMs 0: SIGKILL at once), then releases what holds it. Throws if even SIGKILL
   * did not end it.
   */
  end(graceMs: number): Promise<void>;
  /** A protocol failure, a PTY SIGKILL frame: SIGKILL for every process at once (callers do not wait for it). */
  killAll(): Promise<void>;
  /**
   * Runs `fn` while no process of the execution runs, then lets them go on (pty-output.ts stops
   * the terminal this way). False, and `fn` not run, when this containment cannot hold them still.
   */
  quiesce(fn: () => void): Promise<boolean>;
  /** True when the kernel says nothing of the execution is left, without signalling anything. */
  hasEnded(): boolean;
  /** Removes what it keeps on the host (an execution's cgroup) once nothing runs in it. */
  remove(): void;
}
