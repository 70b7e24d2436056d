/**
 * Inside the Linux sandbox: this runtime binary, run by bwrap as `__sandbox-init` (pid 2 of the
 * sandbox's pid namespace, below bwrap's own init). It starts the workload and tells the
 * wrapper, over the control socket (fd 3), exactly how it ended: bwrap itself only reports a
 * death by signal n as status 128+n, so exit 143 and SIGTERM would look alike.
 *
 * Conversation on fd 3, one JSON object per line:
 *   wrapper → init  SandboxRequest            what to run, where, with which env
 *   init → wrapper  spawned | failed          the workload exists (its pid here, start time), or why not
 *   wrapper → init  recorded                  the wrapper has the workload's identity
 *   init → wrapper  exited                    the workload's exact end: code, or signal name
 *   wrapper → init  release                   cleanup done; the init exits and the sandbox ends
 * Until `recorded` arrives the init blocks in a read, so it cannot reap the workload: the
 * workload's pid stays the workload (alive or zombie) while the wrapper looks it up.
 */
import { closeSync, readSync, writeSync } from "node:fs";
import { identityOf, openDirectory } from "../platform/directory.ts";
import { becomeForegroundGroup, setCloseOnExec } from "../platform/libc.ts";
import { readProcess } from "../platform/process.ts";
import { SANDBOX_FDS } from "../platform/sandbox.ts";

/** The hidden commands main.ts dispatches before anything else. */
export const SANDBOX_INIT = "__sandbox-init";
export const SANDBOX_EXEC = "__sandbox-exec";

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
}

export type SandboxReport =
  | { type: "spawned"; pid: number; startTicks: number }
  | { type: "failed"; code: number; message: string }
  | { type: "exited"; code: number | null; signal: string | null };

/** The largest line either side sends (a request carries the envelope's env). */
const MAX_LINE = 8 * 1024 * 1024;

/** Blocking line reads from a descriptor (the event loop stays stopped meanwhile, on purpose). */
export class LineReader {
  #pending = Buffer.alloc(0);
  readonly #chunk = Buffer.allocUnsafe(64 * 1024);
  constructor(readonly fd: number) {}

  /** The next line without its `\n`, or null at EOF. */
  next(): string | null {
    for (;;) {
      const end = this.#pending.indexOf(0x0a);
      if (end >= 0) {
        const line = this.#pending.subarray(0, end).toString("utf8");
        this.#pending = this.#pending.subarray(end + 1);
        return line;
      }
      if (this.#pending.length > MAX_LINE) throw new Error(`a line longer than ${MAX_LINE} bytes on fd ${this.fd}`);
      let n: number;
      try {
        n = readSync(this.fd, this.#chunk, 0, this.#chunk.length, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EAGAIN") {
          Bun.sleepSync(1);
          continue;
        }
        throw error;
      }
      if (n === 0) return null;
      this.#pending = Buffer.concat([this.#pending, this.#chunk.subarray(0, n)]);
    }
  }
}

function send(fd: number, message: object): void {
  const bytes = Buffer.from(`${JSON.stringify(message)}\n`);
  for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset);
}

/** `__sandbox-init`: start the workload, report, wait for it, report its end, wait for release. */
export async function sandboxInit(): Promise<number> {
  const control = new LineReader(SANDBOX_FDS.control);
  const line = control.next();
  if (line === null) return 1;
  const request = JSON.parse(line) as SandboxRequest;
  let workload;
  try {
    workload = await startInSandbox(request);
  } catch (error) {
    const code = error instanceof LaunchError ? error.code : 1;
    send(SANDBOX_FDS.control, { type: "failed", code, message: (error as Error).message } satisfies SandboxReport);
    return 1;
  }
  const info = readProcess(workload.pid);
  send(SANDBOX_FDS.control, { type: "spawned", pid: workload.pid, startTicks: info?.startTicks ?? 0 } satisfies SandboxReport);
  // Blocks the event loop, and with it the reaping of the workload, until the wrapper has its identity.
  if (control.next() === null) return 1;
  await workload.exited;
  const signal = workload.signalCode === null ? null : String(workload.signalCode);
  send(SANDBOX_FDS.control, { type: "exited", code: signal === null ? workload.exitCode : null, signal } satisfies SandboxReport);
  control.next();
  return 0;
}

/** Why the workload could not be started; `code` as the wrapper would exit (127, 126, 1). */
class LaunchError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/**
 * The checked directory, found again inside the sandbox: the path is walked again here (no
 * walk can reach beyond what the sandbox shows), and the directory reached must be the very
 * one the wrapper checked, by device and inode. Else the workload does not start.
 */
function openCheckedCwd(request: SandboxRequest): number {
  let fd: number;
  try {
    fd = openDirectory(request.cwd);
  } catch (error) {
    throw new LaunchError(`cwd ${JSON.stringify(request.cwd)} cannot be opened inside the sandbox: ${(error as Error).message}`, 1);
  }
  if (identityOf(fd) !== request.cwdIdentity) {
    closeSync(fd);
    throw new LaunchError(`cwd ${JSON.stringify(request.cwd)} changed while the sandbox started (it is no longer the directory that was checked); nothing was launched`, 1);
  }
  return fd;
}

function launchError(request: SandboxRequest, error: unknown): LaunchError {
  const err = error as NodeJS.ErrnoException;
  return new LaunchError(`cannot launch ${JSON.stringify(request.argv[0])} inside the sandbox: ${err.message}`, err.code === "ENOENT" ? 127 : 126);
}

/**
 * Pipes: the workload leads its own session (as without the sandbox) on the daemon's own
 * descriptors, which only this process had (fds 5–7) and closes once they are handed over.
 * PTY: a second copy of this binary execs into the workload after taking the terminal's
 * foreground (see sandboxExec); bwrap's session holds the terminal and cannot hand it over.
 */
async function startInSandbox(request: SandboxRequest) {
  const cwdFd = openCheckedCwd(request);
  const cwd = `/proc/self/fd/${cwdFd}`;
  try {
    if (request.mode === "pipes") {
      try {
        return Bun.spawn([request.program, ...request.argv.slice(1)], {
          argv0: request.argv[0],
          cwd,
          env: request.env,
          detached: true,
          stdio: [SANDBOX_FDS.stdin, SANDBOX_FDS.stdout, SANDBOX_FDS.stderr],
        });
      } catch (error) {
        throw launchError(request, error);
      } finally {
        for (const fd of [SANDBOX_FDS.stdin, SANDBOX_FDS.stdout, SANDBOX_FDS.stderr]) closeSync(fd);
      }
    }
    const stage = Bun.spawn([process.execPath, SANDBOX_EXEC], { cwd, env: {}, stdio: ["inherit", "inherit", "inherit", "pipe"] });
    const link = stage.stdio[3] as number;
    send(link, { program: request.program, argv: request.argv, env: request.env });
    // The stage's copy of the link is close-on-exec: EOF without an answer means it became the workload.
    const answer = new LineReader(link).next();
    if (answer !== null) {
      await stage.exited;
      const failure = JSON.parse(answer) as { code: number; message: string };
      throw new LaunchError(failure.message, failure.code);
    }
    return stage;
  } finally {
    closeSync(cwdFd);
  }
}

/**
 * `__sandbox-exec` (PTY mode only): a process of bwrap's session (the one that holds the
 * terminal) makes itself a process group of its own and the terminal's foreground group, then
 * execs into the workload: same pid, default signal dispositions, the exact env, argv[0] as
 * given, only fds 0–2. An exec that fails is reported on the link before exiting 127.
 */
export function sandboxExec(): number {
  const link = 3;
  const line = new LineReader(link).next();
  if (line === null) return 1;
  const request = JSON.parse(line) as { program: string; argv: string[]; env: Record<string, string> };
  const reply = (code: number, message: string) => {
    send(link, { code, message });
    return code;
  };
  try {
    becomeForegroundGroup(0);
    setCloseOnExec(link);
  } catch (error) {
    return reply(1, `cannot give the workload the terminal inside the sandbox: ${(error as Error).message}`);
  }
  // Bun ignores SIGPIPE and SIGXFSZ in itself, and an exec keeps ignored signals ignored.
  for (const signal of ["SIGPIPE", "SIGXFSZ"] as const) {
    const restore = () => {};
    process.on(signal, restore);
    process.removeListener(signal, restore);
  }
  // process.execve is experimental in Bun 1.4: its warning would otherwise reach the terminal.
  process.on("warning", () => {});
  try {
    (process as unknown as { execve(file: string, args: string[], env: Record<string, string>): never }).execve(request.program, request.argv, request.env);
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    return reply(err.code === "ENOENT" ? 127 : 126, `cannot launch ${JSON.stringify(request.argv[0])} inside the sandbox: ${err.message}`);
  }
  return 1;
}
