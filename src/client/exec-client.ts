/**
 * The daemon's side of one `exec`, for every client in this repository that is not a test
 * (`run`, doctor's helper check, the bench, the demo): started as the daemon starts it
 * (spawn.ts), fd 4 decoded and judged by the lifecycle checker as the daemon judges it, the
 * first protocol violation kept, and the daemon's cleanup after one.
 */
import type { ChildProcess } from "node:child_process";
import type { Writable } from "node:stream";
import { CONTROL_FD, EventSequence, FrameDecoder, ProcessEvent, type SpawnEnvelope } from "../protocol/index.ts";
import { killExecution, type CleanupOptions } from "./cleanup.ts";
import { spawnExec, type SpawnOptions, type WrapperStatus } from "./spawn.ts";

/** How the exec ended, as far as the protocol tells. */
export interface Ending {
  /** The authoritative fd 4 exit, when the lifecycle completed. */
  exit: { code: number | null; signal: string | null } | null;
  /** An fd 4 error event's message. */
  error: string | null;
  /** The first protocol violation seen (bad frame, illegal sequence, missed ack). */
  violation: string | null;
  started: boolean;
  /** The wrapper's own exit status. */
  wrapper: WrapperStatus;
}

interface ExecClientOptions extends SpawnOptions {
  /** SIGKILL the wrapper at the first violation (a client that cannot wait for it to end). */
  killOnViolation?: boolean;
}

/** The wrapper process and its fd 4 event stream, judged exactly like the daemon judges it. */
export class ExecClient {
  readonly child: ChildProcess;
  readonly sequence: EventSequence;
  /** Resolves once the wrapper exited and fd 4 ended. */
  readonly ended: Promise<Ending>;
  violation: string | null = null;
  error: string | null = null;
  exit: Ending["exit"] = null;
  readonly #killOnViolation: boolean;
  #listeners: ((event: ProcessEvent) => void)[] = [];

  constructor(
    readonly workspaceId: string,
    readonly envelope: SpawnEnvelope,
    options: ExecClientOptions = {},
  ) {
    this.sequence = new EventSequence(envelope.stdio.kind);
    this.#killOnViolation = options.killOnViolation ?? false;
    const exec = spawnExec(workspaceId, envelope, options);
    this.child = exec.child;
    const decoder = new FrameDecoder(ProcessEvent, "fd 4 event");
    const eventsEnded = new Promise<void>((resolve) => {
      exec.events.on("data", (chunk: Buffer) => {
        try {
          for (const event of decoder.push(chunk)) this.#accept(event);
        } catch (error) {
          this.fail((error as Error).message);
        }
      });
      exec.events.on("end", () => {
        try {
          decoder.end();
        } catch (error) {
          this.fail((error as Error).message);
        }
        // Before `started` the wrapper may refuse (its exit status says why); after it, only exit or error ends fd 4.
        if (this.sequence.started && !this.sequence.complete && !this.sequence.failed) {
          this.fail(`fd 4 ended without exit (${this.sequence.describe()})`);
        }
        resolve();
      });
      exec.events.on("error", (error) => {
        this.fail(`cannot read fd 4: ${error.message}`);
        resolve();
      });
    });
    this.ended = Promise.all([exec.exited, eventsEnded]).then(([wrapper]) => ({
      exit: this.exit,
      error: this.error,
      violation: this.violation,
      started: this.sequence.started,
      wrapper,
    }));
  }

  /** Calls `listener` with every accepted event. */
  onEvent(listener: (event: ProcessEvent) => void): void {
    this.#listeners.push(listener);
  }

  /** Writes one control frame on fd 3, unless fd 3 is already closed. */
  control(frame: string): void {
    const controls = this.child.stdio[CONTROL_FD] as Writable;
    if (!controls.writableEnded && !controls.destroyed) controls.write(frame);
  }

  /** Control EOF: pipes right after the envelope, PTY once the workload exited. */
  closeControls(): void {
    const controls = this.child.stdio[CONTROL_FD] as Writable;
    if (!controls.writableEnded) controls.end();
  }

  /** Whether the wrapper process is still running. */
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Records the first protocol violation (and ends the wrapper, when asked to). */
  fail(message: string): void {
    this.violation ??= message;
    if (this.#killOnViolation && this.running) this.child.kill("SIGKILL");
  }

  /** The daemon's cleanup after a protocol failure: `signal … SIGKILL` for the exec, then SIGKILL for the wrapper. */
  async cleanUp(options: CleanupOptions): Promise<void> {
    await killExecution(this.workspaceId, this.envelope, options);
    if (this.running) this.child.kill("SIGKILL");
  }

  #accept(event: ProcessEvent): void {
    this.sequence.accept(event);
    if (event.type === "error") this.error = event.message;
    if (event.type === "exit") this.exit = { code: event.code, signal: event.signal };
    for (const listener of this.#listeners) listener(event);
  }
}
