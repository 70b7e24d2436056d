/**
 * `run`: a human's client for `exec`. It starts `exec` of this same binary exactly as the
 * Paseo daemon does (five pipes, the spawn envelope on fd 3, fd 4 events judged by the
 * lifecycle checker), so what works here works for the daemon. It exits with the workload's
 * code or dies by its signal.
 */
import type { ChildProcess } from "node:child_process";
import { lazyChildProcess } from "../platform/lazy.ts";
import { isTerminal } from "../platform/tty.ts";
import type { Readable, Writable } from "node:stream";
import { UsageError, type Invocation } from "../argv.ts";
import { mirrorExit } from "../exec/mirror.ts";
import { DAEMON_SIGNALS } from "../exec/signals.ts";
import { diagnose, writeAll } from "../output.ts";
import {
  EventSequence,
  FrameDecoder,
  ProcessEvent,
  Purpose,
  ResizeControl,
  SignalControl,
  SpawnEnvelope,
  encodeFrame,
  type SeedOf,
  type Stdio,
} from "../protocol/index.ts";
import { operatorOptions, runOperation, selfCommand, selfEnv } from "./common.ts";

/** The daemon's deadline for a resize acknowledgement. */
const RESIZE_ACK_MS = 1000;
/** The daemon's budget for the `signal … SIGKILL` cleanup after a protocol failure. */
const CLEANUP_MS = 1000;

/** Purpose kinds `run --purpose` offers (run speaks the seed dialect); the ones needing more fields get fixed values. */
export const PURPOSES: Record<string, () => SeedOf<typeof Purpose>> = {
  terminal: () => ({ kind: "terminal", terminalId: `run-${process.pid}` }),
  "workspace-script": () => ({ kind: "workspace-script", script: "run" }),
  "workspace-helper": () => ({ kind: "workspace-helper" }),
  git: () => ({ kind: "git" }),
  setup: () => ({ kind: "setup" }),
  archive: () => ({ kind: "archive" }),
};

/** A fresh execution identity, shaped like the daemon's: 32 lowercase hex characters. */
export function newExecId(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** The workload environment: empty unless `--inherit-env`, then every `--env K=V` over it. */
function workloadEnv(invocation: Invocation): Record<string, string> | string {
  const env: Record<string, string> = {};
  if (invocation.switches.has("inherit-env")) {
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  }
  for (const entry of invocation.lists.get("env") ?? []) {
    const eq = entry.indexOf("=");
    if (eq <= 0) return `--env needs NAME=VALUE, got ${JSON.stringify(entry)}`;
    env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

/** The size of the terminal on fd 1 (else fd 0), or the daemon's 80x24. */
function terminalSize(): { rows: number; cols: number } {
  const stream = isTerminal(1) ? process.stdout : null;
  const rows = stream?.rows ?? 0;
  const cols = stream?.columns ?? 0;
  return rows > 0 && cols > 0 ? { rows, cols } : { rows: 24, cols: 80 };
}

/** The spawn envelope the flags describe, or a usage message. */
function buildEnvelope(invocation: Invocation, pty: boolean): SeedOf<typeof SpawnEnvelope> | string {
  const env = workloadEnv(invocation);
  if (typeof env === "string") return env;
  const kind = invocation.flags.get("purpose") ?? (pty ? "terminal" : "workspace-script");
  const purpose = PURPOSES[kind];
  if (!purpose) return `--purpose must be one of ${Object.keys(PURPOSES).join(", ")}; got ${JSON.stringify(kind)}`;
  let stdio: Stdio = { kind: "pipes" };
  if (pty) {
    stdio = { kind: "pty", ...terminalSize() };
    if (process.env.TERM) stdio.term = process.env.TERM;
  }
  const cwd = invocation.flags.get("cwd");
  const options = operatorOptions(invocation);
  const helperPath = invocation.flags.get("helper-path");
  if (helperPath !== undefined) options.helperPath = helperPath;
  return {
    type: "spawn",
    protocolVersion: 1,
    argv: invocation.rest,
    ...(cwd === undefined ? {} : { cwd }),
    env,
    purpose: purpose(),
    options,
    execId: newExecId(),
    stdio,
  };
}

/** How the exec ended, as far as the protocol tells. */
interface Ending {
  /** The authoritative fd 4 exit, when the lifecycle completed. */
  exit: { code: number | null; signal: string | null } | null;
  /** An fd 4 error event's message. */
  error: string | null;
  /** The first protocol violation seen (bad frame, illegal sequence, missed ack). */
  violation: string | null;
  started: boolean;
  /** The wrapper's own exit status. */
  wrapper: { code: number | null; signal: string | null };
}

/** The wrapper process and its fd 4 event stream, judged exactly like the daemon judges it. */
class WrapperClient {
  readonly child: ChildProcess;
  readonly sequence: EventSequence;
  readonly ended: Promise<Ending>;
  violation: string | null = null;
  error: string | null = null;
  exit: Ending["exit"] = null;
  #listeners: ((event: ProcessEvent) => void)[] = [];

  constructor(workspaceId: string, envelope: SpawnEnvelope, stdio: ("pipe" | "inherit")[]) {
    this.sequence = new EventSequence(envelope.stdio.kind);
    const [program, ...prefix] = selfCommand();
    // detached: the wrapper leaves our process group, so a Ctrl-C on the human's terminal
    // reaches only `run`, which forwards it once, as the daemon would.
    this.child = lazyChildProcess().spawn(program!, [...prefix, "exec", "--workspace-id", workspaceId], {
      stdio: [...stdio, "pipe", "pipe"],
      env: selfEnv(),
      detached: true,
    });
    const controls = this.child.stdio[3] as Writable;
    controls.on("error", () => {});
    this.child.stdin?.on("error", () => {});
    const decoder = new FrameDecoder(ProcessEvent, "fd 4 event");
    const events = this.child.stdio[4] as Readable;
    const eventsEnded = new Promise<void>((resolve) => {
      events.on("data", (chunk: Buffer) => {
        try {
          for (const event of decoder.push(chunk)) this.#accept(event);
        } catch (error) {
          this.fail((error as Error).message);
        }
      });
      events.on("end", () => {
        try {
          decoder.end();
        } catch (error) {
          this.fail((error as Error).message);
        }
        if (this.sequence.started && !this.sequence.complete && !this.sequence.failed) {
          this.fail(`fd 4 ended without exit (${this.sequence.describe()})`);
        }
        resolve();
      });
      events.on("error", (error) => {
        this.fail(`cannot read fd 4: ${error.message}`);
        resolve();
      });
    });
    const exited = new Promise<Ending["wrapper"]>((resolve, reject) => {
      this.child.on("exit", (code, signal) => resolve({ code, signal }));
      this.child.on("error", reject);
    });
    this.ended = Promise.all([exited, eventsEnded]).then(([wrapper]) => ({
      exit: this.exit,
      error: this.error,
      violation: this.violation,
      started: this.sequence.started,
      wrapper,
    }));
    controls.write(encodeFrame(SpawnEnvelope, envelope, "spawn envelope"));
  }

  /** Calls `listener` with every accepted event. */
  onEvent(listener: (event: ProcessEvent) => void): void {
    this.#listeners.push(listener);
  }

  /** Writes one control frame on fd 3 (PTY), unless fd 3 is already closed. */
  control(frame: string): void {
    const controls = this.child.stdio[3] as Writable;
    if (!controls.writableEnded && !controls.destroyed) controls.write(frame);
  }

  /** Control EOF: pipes right after the envelope, PTY once the workload exited. */
  closeControls(): void {
    const controls = this.child.stdio[3] as Writable;
    if (!controls.writableEnded) controls.end();
  }

  /** Records the first protocol violation. */
  fail(message: string): void {
    this.violation ??= message;
  }

  #accept(event: ProcessEvent): void {
    this.sequence.accept(event);
    if (event.type === "error") this.error = event.message;
    if (event.type === "exit") this.exit = { code: event.code, signal: event.signal };
    for (const listener of this.#listeners) listener(event);
  }
}

/** Pipes mode: the workload uses the human's own fd 0/1/2; signals go to the wrapper pid. */
function runPipes(workspaceId: string, envelope: SpawnEnvelope): Promise<Ending> {
  const held: NodeJS.Signals[] = [];
  let client: WrapperClient | null = null;
  const forward = (signal: NodeJS.Signals) => {
    // Like the daemon: hold signals until `started`, never signal a finished wrapper.
    if (!client?.sequence.started) held.push(signal);
    else if (!client.sequence.complete && client.child.exitCode === null) client.child.kill(signal);
  };
  for (const signal of DAEMON_SIGNALS) process.on(signal, () => forward(signal));
  client = new WrapperClient(workspaceId, envelope, ["inherit", "inherit", "inherit"]);
  client.closeControls();
  client.onEvent((event) => {
    if (event.type === "started") for (const signal of held.splice(0)) forward(signal);
  });
  return finish(client, workspaceId, envelope);
}

/**
 * The human's terminal in raw mode while a PTY workload runs: every key (Ctrl-C included)
 * goes to the workload's terminal as a byte, whose line discipline makes the signals.
 */
class RawTerminal {
  #raw = false;
  readonly #restore = () => this.restore();

  enable(): void {
    if (!isTerminal(0)) return;
    process.stdin.setRawMode(true);
    this.#raw = true;
    process.on("exit", this.#restore);
  }

  get raw(): boolean {
    return this.#raw;
  }

  /** Back to the mode we found; safe to call more than once, on any exit path. */
  restore(): void {
    if (!this.#raw) return;
    this.#raw = false;
    try {
      process.stdin.setRawMode(false);
    } catch {
      // The terminal went away (hangup): nothing left to restore.
    }
  }
}

/**
 * PTY mode: local keys are copied to fd 0 (held while a resize awaits its ack), fd 1 is the
 * workload's raw terminal output, SIGWINCH becomes resize frames one at a time, and
 * SIGINT/SIGTERM/SIGHUP sent to `run` become signal frames.
 */
async function runPty(workspaceId: string, envelope: SpawnEnvelope, terminal: RawTerminal): Promise<Ending> {
  // Handlers first: a signal landing before them would kill `run` and orphan the wrapper.
  // Frames are not held until `started`: the wrapper queues early ones itself.
  const early: NodeJS.Signals[] = [];
  let client: WrapperClient | null = null;
  const sendSignal = (signal: NodeJS.Signals) => {
    if (!client) early.push(signal);
    else client.control(encodeFrame(SignalControl, { type: "signal", protocolVersion: 1, signal }, "signal control"));
  };
  for (const signal of DAEMON_SIGNALS) process.on(signal, () => sendSignal(signal));
  terminal.enable();
  client = new WrapperClient(workspaceId, envelope, ["pipe", "pipe", "pipe"]);
  early.splice(0).forEach(sendSignal);
  const resizes = new ResizeQueue(client, envelope.stdio as { rows: number; cols: number });
  process.on("SIGWINCH", () => resizes.request(terminalSize()));

  const input = client.child.stdin!;
  const stdin = process.stdin;
  const copyIn = (chunk: Buffer) => {
    if (resizes.waiting) resizes.hold(chunk);
    else if (!input.write(chunk)) {
      stdin.pause();
      input.once("drain", () => stdin.resume());
    }
  };
  resizes.onRelease((chunks) => chunks.forEach(copyIn));
  stdin.on("data", copyIn);
  stdin.on("end", () => resizes.whenIdle(() => input.end()));
  stdin.on("error", () => {});

  const outputDone = new Promise<void>((resolve) => {
    // A hung-up terminal cannot take output any more; keep draining so the wrapper never blocks.
    let terminalGone = false;
    client.child.stdout!.on("data", (chunk: Buffer) => {
      if (terminalGone) return;
      try {
        writeAll(1, chunk);
      } catch {
        terminalGone = true;
      }
    });
    client.child.stdout!.on("end", resolve);
    client.child.stdout!.on("error", () => resolve());
  });
  client.child.stderr!.on("data", (chunk: Buffer) => {
    try {
      writeAll(2, terminal.raw ? chunk.toString().replace(/\r?\n/g, "\r\n") : chunk);
    } catch {
      // stderr is gone with the terminal; the exit status still tells.
    }
  });
  client.onEvent((event) => {
    if (event.type === "exit") client.closeControls();
  });

  const ending = await finish(client, workspaceId, envelope);
  await outputDone;
  resizes.stop();
  stdin.removeAllListeners("data");
  stdin.pause();
  client.closeControls();
  return ending;
}

/** One resize in flight at a time, acknowledged within the daemon's deadline; input waits. */
class ResizeQueue {
  #nextId = 1;
  #inFlight: { id: number; timer: ReturnType<typeof setTimeout> | null } | null = null;
  #wanted: { rows: number; cols: number } | null = null;
  #last: { rows: number; cols: number };
  #held: Buffer[] = [];
  #release: (chunks: Buffer[]) => void = () => {};
  #idle: (() => void)[] = [];
  #stopped = false;

  constructor(
    readonly client: WrapperClient,
    initial: { rows: number; cols: number },
  ) {
    this.#last = initial;
    client.onEvent((event) => {
      if (event.type === "started" && this.#inFlight) this.#arm(this.#inFlight);
      if (event.type === "resized") this.#acknowledged(event.id);
      if (event.type === "eof" || event.type === "exit" || event.type === "error") this.#drop();
    });
  }

  get waiting(): boolean {
    return this.#inFlight !== null;
  }

  hold(chunk: Buffer): void {
    this.#held.push(chunk);
  }

  onRelease(release: (chunks: Buffer[]) => void): void {
    this.#release = release;
  }

  /** Runs `fn` once no resize is in flight. */
  whenIdle(fn: () => void): void {
    if (this.#inFlight) this.#idle.push(fn);
    else fn();
  }

  request(size: { rows: number; cols: number }): void {
    if (this.#stopped) return;
    this.#wanted = size;
    this.#next();
  }

  stop(): void {
    this.#stopped = true;
    this.#drop();
  }

  #next(): void {
    const size = this.#wanted;
    if (this.#inFlight || !size || this.#stopped || this.client.sequence.eof) return;
    this.#wanted = null;
    if (size.rows === this.#last.rows && size.cols === this.#last.cols) return;
    this.#last = size;
    const inFlight = { id: this.#nextId++, timer: null };
    this.#inFlight = inFlight;
    this.client.control(encodeFrame(ResizeControl, { type: "resize", protocolVersion: 1, id: inFlight.id, ...size }, "resize control"));
    if (this.client.sequence.started) this.#arm(inFlight);
  }

  /** The deadline runs from `started`: a wrapper acknowledges nothing before it. */
  #arm(inFlight: { id: number; timer: ReturnType<typeof setTimeout> | null }): void {
    inFlight.timer ??= setTimeout(() => {
      if (this.#inFlight !== inFlight || this.client.sequence.eof) return;
      this.client.fail(`resize ${inFlight.id} was not acknowledged within ${RESIZE_ACK_MS} ms`);
      this.client.child.kill("SIGKILL");
    }, RESIZE_ACK_MS);
  }

  #acknowledged(id: number): void {
    if (this.#inFlight?.id !== id) {
      this.client.fail(`resized ${id} acknowledges no pending resize`);
      return;
    }
    this.#settle();
    this.#next();
  }

  /** After eof no ack comes: stop waiting and let held input through. */
  #drop(): void {
    this.#wanted = null;
    this.#settle();
  }

  #settle(): void {
    if (this.#inFlight?.timer) clearTimeout(this.#inFlight.timer);
    this.#inFlight = null;
    const held = this.#held.splice(0);
    if (held.length) this.#release(held);
    for (const fn of this.#idle.splice(0)) fn();
  }
}

/** Waits for the wrapper and its events; after a protocol failure, cleans up like the daemon. */
async function finish(client: WrapperClient, workspaceId: string, envelope: SpawnEnvelope): Promise<Ending> {
  const ending = await client.ended;
  if (ending.violation !== null) {
    runOperation(["signal", "--workspace-id", workspaceId, "--exec-id", envelope.execId, "--signal", "SIGKILL"], { protocolVersion: 1, options: envelope.options }, { timeoutMs: CLEANUP_MS, stderr: "ignore" });
    if (client.child.exitCode === null && client.child.signalCode === null) client.child.kill("SIGKILL");
  }
  return ending;
}

/** What a captured exec printed and how it ended (see captureExec). */
export interface CapturedExec {
  stdout: string;
  stderr: string;
  /** The fd 4 exit, when the lifecycle completed. */
  exit: Ending["exit"];
  /** Why it failed as a protocol exchange or before launch, or null. */
  failure: string | null;
}

/**
 * Runs one non-interactive exec the way the daemon does (stdin closed at once, stdout and
 * stderr collected), SIGKILLing it after `timeoutMs`. For doctor's helper check.
 */
export async function captureExec(workspaceId: string, envelope: SpawnEnvelope, timeoutMs: number): Promise<CapturedExec> {
  const client = new WrapperClient(workspaceId, envelope, ["pipe", "pipe", "pipe"]);
  client.closeControls();
  client.child.stdin?.end();
  const chunks: Record<"stdout" | "stderr", Buffer[]> = { stdout: [], stderr: [] };
  client.child.stdout!.on("data", (chunk: Buffer) => chunks.stdout.push(chunk));
  client.child.stderr!.on("data", (chunk: Buffer) => chunks.stderr.push(chunk));
  const timer = setTimeout(() => client.fail(`no exit within ${timeoutMs} ms`), timeoutMs);
  const killer = setInterval(() => {
    if (client.violation !== null && client.child.exitCode === null) client.child.kill("SIGKILL");
  }, 50);
  let ending: Ending;
  try {
    ending = await finish(client, workspaceId, envelope);
  } finally {
    clearTimeout(timer);
    clearInterval(killer);
  }
  const stderr = Buffer.concat(chunks.stderr).toString().trim();
  let failure = ending.violation ?? ending.error;
  if (failure === null && !ending.started) failure = stderr || `exec ended (${ending.wrapper.signal ?? `exit ${ending.wrapper.code}`}) without starting`;
  return { stdout: Buffer.concat(chunks.stdout).toString(), stderr, exit: ending.exit, failure };
}

/** `run --workspace-id W [--pty] [--cwd REL] [--env K=V]... [--inherit-env] [--purpose KIND] [--helper-path PATH] -- ARGV...` */
export async function run(invocation: Invocation): Promise<number> {
  const pty = invocation.switches.has("pty");
  const envelope = buildEnvelope(invocation, pty);
  if (typeof envelope === "string") throw new UsageError(envelope, invocation.command);
  const workspaceId = invocation.flags.get("workspace-id")!;
  const terminal = new RawTerminal();
  let ending: Ending;
  try {
    ending = pty ? await runPty(workspaceId, envelope, terminal) : await runPipes(workspaceId, envelope);
  } finally {
    terminal.restore();
  }
  if (ending.violation !== null) {
    diagnose(`run: exec protocol failure: ${ending.violation} (execution ${envelope.execId} was cleaned up)`);
    return 1;
  }
  if (ending.error !== null) {
    diagnose(`run: the runtime reported an error: ${ending.error}`);
    return 1;
  }
  if (!ending.started) {
    // exec refused before launching anything (paused, missing, bad cwd, program not found):
    // its own diagnostic is already on stderr; keep its status (127 = not found, as a shell).
    const { code, signal } = ending.wrapper;
    if (code === 127 && envelope.env.PATH === undefined && !envelope.argv[0]!.includes("/") && envelope.purpose.kind !== "workspace-helper") {
      diagnose("run: the workload env is empty unless you ask: add --env PATH=/usr/bin:/bin, --inherit-env, or give an absolute program path");
    }
    if (code !== null && code !== 0) return code;
    diagnose(`run: exec ended (${signal ?? `exit ${code}`}) without starting the workload`);
    return 1;
  }
  const exit = ending.exit!;
  return await mirrorExit(exit.code, exit.signal);
}
