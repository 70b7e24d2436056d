/**
 * A sandboxed execution, as the wrapper holds it: the workload's own processes are held by its
 * cgroup or its proven group and session (`base`); the sandbox's processes (bwrap, its init, the
 * sandbox init) are not among them, so signalling or killing the execution never ends the init
 * before it reported how the leader died. Ending it ends the workload's leftovers first, then
 * the sandbox itself, and with it anything still in its pid namespace.
 */
import type { GroupHandle } from "../platform/pidfd.ts";
import type { ExecutionScope } from "./scope.ts";

/** The sandbox around the workload, as its end needs it (sandbox/sandboxed-workload.ts SandboxedWorkload). */
interface Sandbox {
  /** Ends the sandbox once the workload's processes are gone; resolves when nothing of it remains. */
  release(): Promise<void>;
  /** Set when the workload's end could not be learned from the sandbox init. */
  readonly problem: string | null;
}

export class SandboxScope implements ExecutionScope {
  constructor(
    private readonly sandbox: Sandbox,
    private readonly base: ExecutionScope,
    private readonly handle: GroupHandle | null,
  ) {}

  signal(signal: NodeJS.Signals, timeoutMs: number): Promise<boolean> {
    return this.base.signal(signal, timeoutMs);
  }

  /** The workload's leftovers (SIGTERM, the grace, SIGKILL), then the sandbox; the init's unreadable report is thrown after. */
  async end(graceMs: number): Promise<void> {
    try {
      await this.base.end(graceMs);
    } finally {
      this.handle?.close();
      await this.sandbox.release();
    }
    // Reported (as an error event) by finishWorkload, after which the exit says code 1.
    if (this.sandbox.problem) throw new Error(this.sandbox.problem);
  }

  /** The workload's processes only: the init still reports how the leader died. */
  killAll(): Promise<void> {
    return this.base.killAll();
  }

  quiesce(fn: () => void): Promise<boolean> {
    return this.base.quiesce(fn);
  }

  hasEnded(): boolean {
    return this.base.hasEnded();
  }

  remove(): void {
    this.base.remove();
  }
}
