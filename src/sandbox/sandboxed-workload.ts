/**
 * The wrapper's side of a Linux sandbox. What was spawned is bwrap; the workload is the
 * sandbox init's child (init.ts), found on the host from the init's reports,
 * and its exact end (exit code, or the signal that killed it) comes from the init too.
 */
import type { Subprocess } from "bun";
import { writeSync } from "node:fs";
import { FD_NOT_OPEN, hasErrno, PEER_GONE, TERMINAL_HUNG_UP, tolerating } from "../platform/errno.ts";
import { findInSandbox, holdsPid, identityOfProcess, isSameProcess, readProcess, type ProcessIdentity } from "../platform/process.ts";
import { realtimeSignals } from "../platform/libc/processes.ts";
import { isSignalName } from "../platform/signals.ts";
import { SANDBOX_FDS, type SandboxReport, type SandboxRequest } from "./init-protocol.ts";
import { explainSandboxFailure } from "./tool.ts";

/** The sandbox refused to start the workload (bwrap failed, the program is missing inside…): nothing ran; `code` as the wrapper exits. */
export class SandboxRefused extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** How long release waits for the sandbox's pid namespace to be gone once bwrap exited. */
const TEARDOWN_WAIT_MS = 2000;
/** bwrap's own messages kept for a failure report (pipes mode reads them from its stderr). */
const DIAGNOSTIC_LIMIT = 16 * 1024;

/** Splits the control socket into JSON reports; null once it reached EOF. */
class ReportReader {
  readonly #reader;
  readonly #decoder = new TextDecoder();
  #text = "";
  #done = false;

  constructor(fd: number) {
    this.#reader = Bun.file(fd).stream().getReader();
  }

  async next(): Promise<SandboxReport | null> {
    for (;;) {
      const nl = this.#text.indexOf("\n");
      if (nl >= 0) {
        const line = this.#text.slice(0, nl);
        this.#text = this.#text.slice(nl + 1);
        return JSON.parse(line) as SandboxReport;
      }
      if (this.#done) return null;
      // A read error is the init's report pipe going away with the sandbox: read as its end.
      const { done, value } = await this.#reader.read().catch(() => ({ done: true, value: undefined }));
      if (done || !value) this.#done = true;
      else this.#text += this.#decoder.decode(value, { stream: true });
    }
  }
}

/**
 * The workload inside one sandbox, as the wrapper follows it: its pid on the host, its exact end
 * as the init reports it (the leader-process view exec/launch.ts gives pipes.ts and pty.ts), and
 * the end of the sandbox itself.
 */
export class SandboxedWorkload {
  readonly #bwrap: Subprocess;
  readonly #control: number;
  readonly #reports: ReportReader;
  readonly #diagnostics: Promise<string>;
  #leader: ProcessIdentity | null = null;
  #init: ProcessIdentity | null = null;
  /** The sandbox's own processes on the host: bwrap, its init, the sandbox init. */
  machinery: number[] = [];
  exitCode: number | null = null;
  /** As Bun's Subprocess has it: a name, or the number of a signal without one. */
  signalCode: NodeJS.Signals | number | null = null;
  /** Set when the workload's end could not be learned. */
  problem: string | null = null;
  /** Resolves once the workload's end is known (or the sandbox ended without telling it). */
  exited: Promise<number> = Promise.resolve(0);

  constructor(bwrap: Subprocess, request: SandboxRequest) {
    this.#bwrap = bwrap;
    this.#control = bwrap.stdio[SANDBOX_FDS.control] as number;
    this.#reports = new ReportReader(this.#control);
    this.#diagnostics = collect(bwrap.stderr);
    this.#send(request);
  }

  get pid(): number {
    return this.#leader?.pid ?? 0;
  }

  /** The PTY, held by bwrap's session (PTY mode). */
  get terminal(): Subprocess["terminal"] {
    return this.#bwrap.terminal;
  }

  /**
   * Waits for the init's first report: the workload's host pid, or SandboxRefused when it never
   * started (bwrap refused, the program is missing inside, the cwd changed), nothing having run.
   */
  async start(): Promise<void> {
    const report = await this.#reports.next();
    if (report?.type === "spawned") {
      const found = findInSandbox(this.#bwrap.pid, report.pid, report.startTicks);
      if (found) {
        this.#leader = identityOfProcess({ pid: found.pid, startTicks: report.startTicks });
        this.#init = identityOfProcess({ pid: found.init, startTicks: readProcess(found.init)?.startTicks ?? 0 });
        this.machinery = [this.#bwrap.pid, found.init, readProcess(found.pid)?.ppid ?? found.init];
        this.exited = this.#follow().then(() => this.exitCode ?? 1);
        return;
      }
      this.#bwrap.kill("SIGKILL");
      await this.#bwrap.exited;
      throw new Error(`the sandboxed workload (pid ${report.pid} inside) could not be found on the host`);
    }
    await this.#bwrap.exited;
    if (report?.type === "failed") throw new SandboxRefused(report.message, report.code);
    const status = this.#bwrap.signalCode ?? `exit status ${this.#bwrap.exitCode}`;
    throw new SandboxRefused(`${explainSandboxFailure((await this.#diagnostics) || `bwrap ended with ${status}`)}; nothing was launched`, 1);
  }

  /** The identity is recorded: the init may now reap the workload when it ends. */
  confirmed(): void {
    this.#send({ type: "recorded" });
  }

  /**
   * The init's second report. The workload runs beside the init as the same user, so a report
   * is checked before it is mirrored: an exit code 0–255, or a signal that kills by default
   * (never one that would stop the wrapper, say).
   */
  async #follow(): Promise<void> {
    let report: SandboxReport | null = null;
    try {
      report = await this.#reports.next();
    } catch (error) {
      this.problem = `the sandbox init's report is unreadable: ${(error as Error).message}`;
      return;
    }
    if (report?.type === "exited" && plausibleEnd(report.code, report.signal)) {
      this.exitCode = report.code;
      this.signalCode = report.signal as NodeJS.Signals | number | null;
      return;
    }
    if (report) this.problem = `the sandbox init reported an impossible end: ${JSON.stringify(report).slice(0, 200)}`;
    else this.problem = `the sandbox ended without reporting how the workload ended (bwrap ${this.#bwrap.signalCode ?? `exit status ${this.#bwrap.exitCode}`})`;
  }

  /**
   * Whether the workload's group id is still the workload's: its leader is not our child, so
   * "not reaped yet" is checked on the host (a zombie still holds the pid, and with it the group).
   */
  mayForward(): boolean {
    if (this.exitCode !== null || this.signalCode !== null || this.problem !== null) return false;
    return this.#leader !== null && holdsPid(this.#leader);
  }

  /** SIGKILL for the whole sandbox: bwrap's death takes its init, and the pid namespace, with it. */
  kill(): void {
    this.#bwrap.kill("SIGKILL");
  }

  /**
   * Ends the sandbox once the workload's session was cleaned: the init exits, bwrap follows,
   * and the kernel kills whatever is left in the pid namespace (a daemon that left the
   * session). Returns when the namespace's init is gone, i.e. nothing of the sandbox remains.
   */
  async release(): Promise<void> {
    this.#send({ type: "release" });
    await this.#bwrap.exited;
    const deadline = performance.now() + TEARDOWN_WAIT_MS;
    for (let pause = 1; this.#init !== null && isSameProcess(this.#init); pause = Math.min(pause * 2, 20)) {
      if (performance.now() > deadline) throw new Error(`the sandbox's pid namespace (init ${this.#init.pid}) outlived bwrap by ${TEARDOWN_WAIT_MS} ms`);
      await Bun.sleep(pause);
    }
  }

  /** A message to the init; one it can no longer read (it is gone) needs no answer. */
  #send(message: object): void {
    const bytes = Buffer.from(`${JSON.stringify(message)}\n`);
    tolerating(PEER_GONE, undefined, () => {
      for (let offset = 0; offset < bytes.length; ) offset += writeSync(this.#control, bytes, offset);
    });
  }
}

/** Signals whose default action does not end a process: no workload dies of them. */
const NOT_FATAL = new Set(["SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGCONT", "SIGCHLD", "SIGURG", "SIGWINCH"]);

function plausibleEnd(code: unknown, signal: unknown): boolean {
  if (signal === null) return Number.isInteger(code) && (code as number) >= 0 && (code as number) <= 255;
  // Every real-time signal (the ones without a name) kills by default.
  if (typeof signal === "number") return code === null && realtimeSignals().includes(signal);
  return code === null && typeof signal === "string" && isSignalName(signal) && !NOT_FATAL.has(signal);
}

/** bwrap's stderr in pipes mode (its messages and the init's), bounded; "" when it has none. */
async function collect(stream: Subprocess["stderr"]): Promise<string> {
  if (!stream || typeof stream === "number") return "";
  let text = "";
  try {
    for await (const chunk of stream as ReadableStream<Uint8Array>) {
      if (text.length < DIAGNOSTIC_LIMIT) text += Buffer.from(chunk).toString("utf8");
    }
  } catch (error) {
    // The sandbox going away under the read (its pipe reset or closed): what was read is what we have.
    if (!hasErrno(error, [...PEER_GONE, ...TERMINAL_HUNG_UP, ...FD_NOT_OPEN])) throw error;
  }
  return text.slice(0, DIAGNOSTIC_LIMIT).trim();
}
