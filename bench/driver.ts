/**
 * Drives `exec` of the binary exactly as the Paseo daemon does, through the runtime's own
 * daemon-side client (src/client/: five pipes, the envelope on fd 3, fd 4 decoded and judged by
 * EventSequence), but streams stdout to a callback instead of buffering it, so a 256 MiB run
 * costs no memory, and timestamps `started` with CLOCK_MONOTONIC.
 * `DirectRun` spawns a workload without the runtime through the same API: the baseline.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { ExecClient } from "../src/client/exec-client.ts";
import { SpawnEnvelope, parseStrict, type ProcessEvent } from "../src/protocol/index.ts";
import { monotonicNs } from "./clock.ts";
import { BIN, track } from "./procs.ts";

export interface Done {
  code: number | null;
  signal: string | null;
  stderr: string;
  stdoutBytes: number;
  /** CLOCK_MONOTONIC ns of the first and the last stdout chunk (null when there was none). */
  firstByteAt: bigint | null;
  lastByteAt: bigint | null;
  /** CLOCK_MONOTONIC ns when exit, stdout EOF (and fd 4 EOF for exec) had all happened. */
  endedAt: bigint;
}

export interface ExecDone extends Done {
  events: ProcessEvent[];
  /** The first protocol violation on fd 4, or null for a legal, complete lifecycle. */
  violation: string | null;
}

export interface StreamOptions {
  /** Called with every stdout chunk (nothing is kept otherwise). */
  onStdout?: (chunk: Buffer) => void;
  env?: Record<string, string | undefined>;
  /** The working directory of a direct run (the bench's own otherwise). */
  cwd?: string;
}

export interface ExecOptions extends StreamOptions {
  /** Keep fd 3 open after the envelope (PTY); pipes mode closes it at once like the daemon. */
  keepControls?: boolean;
  bin?: string;
  /** Words before `exec` (`--remote ssh://…`), as a configured runtime command has them. */
  prefix?: string[];
}

// Envelopes and exec ids exactly like the end-to-end tests'.
export { envelope, newExecId } from "../kit/envelope.ts";

function collect(child: ChildProcess, options: StreamOptions) {
  let stdoutBytes = 0;
  let firstByteAt: bigint | null = null;
  let lastByteAt: bigint | null = null;
  const stderr: Buffer[] = [];
  child.stdout!.on("data", (chunk: Buffer) => {
    lastByteAt = monotonicNs();
    firstByteAt ??= lastByteAt;
    stdoutBytes += chunk.length;
    options.onStdout?.(chunk);
  });
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
  child.stdin!.on("error", () => {});
  const stdoutEnded = new Promise<void>((resolve) => child.stdout!.on("end", resolve));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    wait: (more: Promise<unknown>[] = []) =>
      Promise.all([exited, stdoutEnded, ...more]).then(([status]) => ({
        ...status,
        stderr: Buffer.concat(stderr).toString(),
        stdoutBytes,
        firstByteAt,
        lastByteAt,
        endedAt: monotonicNs(),
      })),
  };
}

/** One exec, driven like the daemon. */
export class BenchExec {
  readonly client: ExecClient;
  readonly child: ChildProcess;
  /** CLOCK_MONOTONIC ns just before spawn(). */
  readonly spawnedAt: bigint;
  /** Resolves with the CLOCK_MONOTONIC ns at which `started` was decoded. */
  readonly started: Promise<bigint>;
  readonly done: Promise<ExecDone>;

  constructor(workspaceId: string, env: Record<string, unknown>, options: ExecOptions = {}) {
    const events: ProcessEvent[] = [];
    let spawnedAt = 0n;
    this.client = new ExecClient(workspaceId, parseStrict(SpawnEnvelope, env, "spawn envelope"), {
      command: [options.bin ?? BIN, ...(options.prefix ?? [])],
      env: options.env ?? process.env,
      beforeSpawn: () => (spawnedAt = monotonicNs()),
    });
    this.spawnedAt = spawnedAt;
    this.child = track(this.client.child);
    const streams = collect(this.child, options);
    let onStarted: (at: bigint) => void = () => {};
    this.started = new Promise((resolve) => (onStarted = resolve));
    this.client.onEvent((event) => {
      if (event.type === "started") onStarted(monotonicNs());
      // Like the daemon: once `exit` is in, it closes fd 0 and fd 3 (the wrapper waits
      // briefly for that in PTY mode).
      if (event.type === "exit") this.#hangUp();
      events.push(event);
    });
    this.done = streams.wait([this.client.ended]).then((done) => ({ ...done, events, violation: this.client.violation }));
    if (!options.keepControls) this.closeControls();
  }

  get pid(): number {
    return this.child.pid!;
  }

  #hangUp(): void {
    this.closeStdin();
    this.closeControls();
  }

  /** Writes one control frame on fd 3. */
  sendControl(text: string): void {
    this.client.control(text);
  }

  closeControls(): void {
    this.client.closeControls();
  }

  closeStdin(): void {
    this.child.stdin!.end();
  }
}

/** A workload spawned without the runtime, through the same API and three pipes. */
export class DirectRun {
  readonly child: ChildProcess;
  readonly spawnedAt: bigint;
  /** Resolves with the CLOCK_MONOTONIC ns of the child's 'spawn' event: the direct run's `started`. */
  readonly running: Promise<bigint>;
  readonly done: Promise<Done>;

  constructor(argv: string[], options: StreamOptions = {}) {
    this.spawnedAt = monotonicNs();
    this.child = track(spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], env: options.env ?? {}, cwd: options.cwd }));
    this.running = new Promise((resolve) => this.child.once("spawn", () => resolve(monotonicNs())));
    this.done = collect(this.child, options).wait();
  }

  get pid(): number {
    return this.child.pid!;
  }

  closeStdin(): void {
    this.child.stdin!.end();
  }
}

/** A short description of an exec that did not end the way a benchmark expects. */
export function describeFailure(done: ExecDone): string | null {
  if (done.violation) return `fd 4 protocol violation: ${done.violation}`;
  const error = done.events.find((e) => e.type === "error");
  if (error && error.type === "error") return `error event: ${error.message}`;
  if (done.code !== 0) return `exit ${done.code ?? done.signal}: ${done.stderr.trim()}`;
  return null;
}
