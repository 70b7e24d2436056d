/**
 * Drives `exec` of the compiled binary exactly as the Paseo daemon does: five socketpair stdio
 * descriptors, the spawn envelope on fd 3, fd 4 events decoded and judged by EventSequence.
 * Written apart from the runtime's own client (src/client/) on purpose: the tests judge that
 * client's behaviour too (`run`, `--remote`), and an oracle sharing its code would share its bugs.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { EventSequence, FrameDecoder, ProcessEvent, type Mode } from "../../src/protocol/index.ts";
import { BIN } from "../../kit/binary.ts";

export interface ExecResult {
  code: number | null;
  signal: string | null;
  stdout: Buffer;
  stderr: string;
  events: ProcessEvent[];
  /** The first protocol violation seen on fd 4 (null when the lifecycle was legal and complete). */
  violation: string | null;
}

export interface ExecOptions {
  /** Keep fd 3 open after the envelope (PTY); pipes mode closes it at once like the daemon. */
  keepControls?: boolean;
  /** Extra bytes written to fd 3 in the same write as the envelope. */
  withEnvelope?: string;
  /** Do not send the envelope yet: call sendEnvelope() (the daemon never does this; races do). */
  holdEnvelope?: boolean;
  env?: Record<string, string>;
  /** A descriptor to give the wrapper as fd 1 instead of a pipe the handle reads (stall tests). */
  stdoutFd?: number;
  /** A descriptor to give the wrapper as fd 0 instead of a pipe the handle writes. */
  stdinFd?: number;
  /** Another copy of the binary to run (default: dist/paseo-host-runtime). */
  bin?: string;
  /** Words before `exec` (e.g. `--remote ssh://…`), as a configured runtime command has them. */
  prefix?: string[];
}

export class ExecHandle {
  readonly child: ChildProcess;
  readonly events: ProcessEvent[] = [];
  readonly sequence: EventSequence;
  readonly done: Promise<ExecResult>;
  /** The wrapper's own exit (without waiting for stdout/fd 4 to close). */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  #stdout: Buffer[] = [];
  #stderr: Buffer[] = [];
  #violation: string | null = null;
  #waiters: { test: (e: ProcessEvent) => boolean; resolve: (e: ProcessEvent) => void }[] = [];
  #stdoutWaiters: { text: string; resolve: () => void }[] = [];

  constructor(workspaceId: string, envelope: Record<string, unknown>, options: ExecOptions = {}) {
    const mode = ((envelope.stdio as { kind: Mode }) ?? { kind: "pipes" }).kind;
    this.sequence = new EventSequence(mode);
    this.child = spawn(options.bin ?? BIN, [...(options.prefix ?? []), "exec", "--workspace-id", workspaceId], {
      stdio: [options.stdinFd ?? "pipe", options.stdoutFd ?? "pipe", "pipe", "pipe", "pipe"],
      env: options.env ?? (process.env as Record<string, string>),
    });
    const decoder = new FrameDecoder(ProcessEvent, "fd 4 event");
    this.child.stdout?.on("data", (chunk: Buffer) => {
      this.#stdout.push(chunk);
      this.#checkStdout();
    });
    this.child.stderr!.on("data", (chunk: Buffer) => this.#stderr.push(chunk));
    const events = this.child.stdio[4] as Readable;
    const eventsEnded = new Promise<void>((resolve) => {
      events.on("data", (chunk: Buffer) => {
        try {
          for (const event of decoder.push(chunk)) this.#onEvent(event);
        } catch (error) {
          this.#violation ??= (error as Error).message;
        }
      });
      events.on("end", () => {
        try {
          decoder.end();
          this.sequence.finish();
        } catch (error) {
          this.#violation ??= (error as Error).message;
        }
        resolve();
      });
      events.on("error", () => resolve());
    });
    (this.child.stdio[3] as Writable).on("error", () => {});
    this.child.stdin?.on("error", () => {});
    const stdoutEnded = new Promise<void>((resolve) => (this.child.stdout ? this.child.stdout.on("end", resolve) : resolve()));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      this.child.on("exit", (code, signal) => resolve({ code, signal })),
    );
    this.exited = exited;
    this.done = Promise.all([exited, eventsEnded, stdoutEnded]).then(([status]) => ({
      ...status,
      stdout: Buffer.concat(this.#stdout),
      stderr: Buffer.concat(this.#stderr).toString(),
      events: this.events,
      violation: this.#violation,
    }));
    this.#envelope = `${JSON.stringify(envelope)}\n${options.withEnvelope ?? ""}`;
    this.#keepControls = options.keepControls ?? false;
    if (!options.holdEnvelope) this.sendEnvelope();
  }

  #envelope: string;
  #keepControls: boolean;

  /** Writes the spawn envelope (and closes fd 3 unless keepControls). */
  sendEnvelope(): void {
    this.sendControl(this.#envelope);
    if (!this.#keepControls) this.closeControls();
  }

  get pid(): number {
    return this.child.pid!;
  }

  sendControl(text: string): void {
    (this.child.stdio[3] as Writable).write(text);
  }

  closeControls(): void {
    (this.child.stdio[3] as Writable).end();
  }

  write(data: string | Uint8Array): void {
    this.child.stdin!.write(data);
  }

  closeStdin(): void {
    // Without a pipe (stdinFd) there is nothing of ours to close.
    this.child.stdin?.end();
  }

  stdoutText(): string {
    return Buffer.concat(this.#stdout).toString();
  }

  /** Resolves with the first event of `type` (already seen or future). */
  waitEvent(type: ProcessEvent["type"], test: (e: ProcessEvent) => boolean = () => true): Promise<ProcessEvent> {
    const seen = this.events.find((e) => e.type === type && test(e));
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.#waiters.push({ test: (e) => e.type === type && test(e), resolve }));
  }

  /** Resolves once stdout contains `text`. */
  waitStdout(text: string): Promise<void> {
    if (this.stdoutText().includes(text)) return Promise.resolve();
    return new Promise((resolve) => this.#stdoutWaiters.push({ text, resolve }));
  }

  #onEvent(event: ProcessEvent): void {
    this.events.push(event);
    try {
      this.sequence.accept(event);
    } catch (error) {
      this.#violation ??= (error as Error).message;
    }
    this.#waiters = this.#waiters.filter((w) => (w.test(event) ? (w.resolve(event), false) : true));
  }

  #checkStdout(): void {
    if (this.#stdoutWaiters.length === 0) return;
    const text = this.stdoutText();
    this.#stdoutWaiters = this.#stdoutWaiters.filter((w) => (text.includes(w.text) ? (w.resolve(), false) : true));
  }
}

/** Starts an exec like the daemon. */
export function startExec(workspaceId: string, env: Record<string, unknown>, options?: ExecOptions): ExecHandle {
  return new ExecHandle(workspaceId, env, options);
}
