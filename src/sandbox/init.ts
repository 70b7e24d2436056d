/**
 * Inside the Linux sandbox: the sandbox init, pid 2 of the sandbox's pid namespace (below
 * bwrap's own init, which reaps orphans). It starts the workload and tells the wrapper, over
 * its control socket, exactly how it ended: bwrap itself reports a death by signal n only as
 * status 128+n, so exit 143 and SIGTERM would look alike. The conversation is in
 * init-protocol.ts.
 *
 * This file is not part of the runtime's bundle: it is bundled on its own at build time with
 * what it imports (init-bundle.ts), the runtime holds that text, bwrap copies it into the
 * sandbox (SANDBOX_INIT_PATH), and the runtime's embedded engine runs it there (`BUN_BE_BUN=1
 * <runtime> <that file> init FD`, see launch.ts), which starts in about half the time the
 * whole runtime takes. So it imports little: node:fs, bun:ffi, the egress forwarder and two
 * leaves of platform/ (errno.ts, identity.ts).
 * In PTY mode it runs a second time, as `exec FD`: the stage that takes the terminal's
 * foreground and execs into the workload.
 */
import { closeSync, constants, lstatSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import { dlopen, FFIType, read, type Pointer } from "bun:ffi";
import { hasErrno, WOULD_BLOCK } from "../platform/errno.ts";
import { identityOf, identityOfStat } from "../platform/identity.ts";
import type { SandboxReport, SandboxRequest } from "./init-protocol.ts";
import { startForwarder } from "./network/forwarder.ts";

/** The largest line either side sends (a request carries the envelope's env). */
const MAX_LINE = 8 * 1024 * 1024;
/** Linux open(2) flags Node's constants lack. */
const O_CLOEXEC = 0o2000000;

/** Why the workload could not be started; `code` as the wrapper would exit (127, 126, 1). */
class LaunchError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** Blocking line reads from a descriptor (the event loop stays stopped meanwhile, on purpose). */
class LineReader {
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
        if (!hasErrno(error, WOULD_BLOCK)) throw error;
        Bun.sleepSync(1);
        continue;
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

/** A process's start time in clock ticks since boot (the same clock inside the sandbox and out). */
function startTicksOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
}

/** `init FD`: start the workload, report, wait for it, report its end, wait for release. */
async function init(control: number): Promise<number> {
  const reader = new LineReader(control);
  const line = reader.next();
  if (line === null) return 1;
  const request = JSON.parse(line) as SandboxRequest;
  let workload;
  try {
    if (request.egress) await forwardEgress(request.egress);
    workload = await start(request);
  } catch (error) {
    const code = error instanceof LaunchError ? error.code : 1;
    send(control, { type: "failed", code, message: (error as Error).message } satisfies SandboxReport);
    return 1;
  }
  send(control, { type: "spawned", pid: workload.pid, startTicks: startTicksOf(workload.pid) } satisfies SandboxReport);
  // Blocks the event loop, and with it the reaping of the workload, until the wrapper has its identity.
  if (reader.next() === null) return 1;
  await workload.exited;
  // A signal without a name (a real-time one) is its number: the wrapper reports those as 128+n.
  const signal = workload.signalCode;
  send(control, { type: "exited", code: signal === null ? workload.exitCode : null, signal } satisfies SandboxReport);
  reader.next();
  return 0;
}

/**
 * Under a network allowlist: the sandbox's own loopback `port` forwarded to the policy proxy's
 * socket (shown at `socket`), for as long as the init lives, listening before the workload
 * starts (network/forwarder.ts, on Bun's own sockets: a slow reader holds one chunk per
 * direction and never another connection). The sandbox's network namespace has nothing else:
 * this is its only way out.
 */
async function forwardEgress(egress: { port: number; socket: string }): Promise<void> {
  try {
    // A connection the proxy's socket refuses ends that connection: the proxy logs its own failures.
    await startForwarder({ socketPath: egress.socket, port: egress.port });
  } catch (error) {
    throw new LaunchError(`the network proxy's port ${egress.port} cannot be opened inside the sandbox: ${(error as Error).message}`, 1);
  }
}

/**
 * The checked directory, found again inside the sandbox: the path is walked again here (no
 * walk can reach beyond what the sandbox shows; a symlink at the last component is refused),
 * and the directory reached must be the very one the wrapper checked, by device and inode.
 * Else the workload does not start.
 */
function openCheckedCwd(request: SandboxRequest): number {
  let fd: number;
  try {
    fd = openSync(request.cwd, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | O_CLOEXEC);
  } catch (error) {
    throw new LaunchError(`cwd ${JSON.stringify(request.cwd)} cannot be opened inside the sandbox: ${(error as Error).message}`, 1);
  }
  if (identityOf(fd) !== request.cwdIdentity) {
    closeSync(fd);
    throw new LaunchError(`cwd ${JSON.stringify(request.cwd)} changed while the sandbox started (it is no longer the directory that was checked); nothing was launched`, 1);
  }
  return fd;
}

/**
 * Each pinned bind is the entry the wrapper looked at: bwrap resolved its source by path, after
 * that look, and a concurrent workload could have put a symbolic link there meanwhile.
 */
function checkPinned(request: SandboxRequest): void {
  for (const { path, identity } of request.pinned) {
    const stat = lstatSync(path, { bigint: true, throwIfNoEntry: false });
    if (stat === undefined || identityOfStat(stat) !== identity) throw new LaunchError(`${JSON.stringify(path)} changed while the sandbox started (it is no longer what was checked); nothing was launched`, 1);
  }
}

/** A spawn or exec of the workload that failed: 127 when it is not there, 126 for any other reason (the shell's codes). */
function launchError(argv0: string | undefined, error: unknown): LaunchError {
  return new LaunchError(`cannot launch ${JSON.stringify(argv0)} inside the sandbox: ${(error as Error).message}`, hasErrno(error, ["ENOENT"]) ? 127 : 126);
}

/**
 * Pipes: the workload leads its own session (as without the sandbox) on the daemon's own
 * descriptors, which only this process had and closes once they are handed over. PTY: this
 * script runs again as `exec` and execs into the workload after taking the terminal's
 * foreground (bwrap's session holds the terminal and cannot hand it over).
 */
async function start(request: SandboxRequest) {
  checkPinned(request);
  const cwdFd = openCheckedCwd(request);
  const cwd = `/proc/self/fd/${cwdFd}`;
  try {
    if (request.stdio) {
      try {
        return Bun.spawn([request.program, ...request.argv.slice(1)], { argv0: request.argv[0], cwd, env: request.env, detached: true, stdio: request.stdio });
      } catch (error) {
        throw launchError(request.argv[0], error);
      } finally {
        for (const fd of request.stdio) closeSync(fd);
      }
    }
    // This very script again (its own command line), as the exec stage, talking on its fd 3.
    const self = readFileSync("/proc/self/cmdline", "utf8").split("\0").slice(0, -1);
    const stage = Bun.spawn([...self.slice(0, -2), "exec", "3"], { cwd, env: { BUN_BE_BUN: "1" }, stdio: ["inherit", "inherit", "inherit", "pipe"] });
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

/** The libc calls the exec stage makes on itself (`fcntl` is variadic: one int argument here). */
function libc() {
  return dlopen("libc.so.6", {
    setpgid: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    tcsetpgrp: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    signal: { args: [FFIType.i32, FFIType.u64], returns: FFIType.u64 },
    fcntl: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  }).symbols;
}

/**
 * Makes this process the leader of a new process group and that group the foreground group of
 * its controlling terminal (on fd 0), then marks `link` close-on-exec. A background group
 * calling tcsetpgrp gets SIGTTOU, so it is ignored for the call and restored right after.
 */
function takeForeground(link: number): void {
  const lib = libc();
  const errno = () => read.i32(lib.__errno_location() as Pointer, 0);
  const SIGTTOU = 22;
  if (lib.setpgid(0, 0) < 0) throw new Error(`setpgid(0, 0) failed: errno ${errno()}`);
  lib.signal(SIGTTOU, 1 /* SIG_IGN */);
  const result = lib.tcsetpgrp(0, process.pid);
  const failure = result < 0 ? errno() : 0;
  lib.signal(SIGTTOU, 0 /* SIG_DFL */);
  if (result < 0) throw new Error(`tcsetpgrp(0, ${process.pid}) failed: errno ${failure}`);
  if (lib.fcntl(link, 2 /* F_SETFD */, 1 /* FD_CLOEXEC */) < 0) throw new Error(`fcntl(${link}, F_SETFD) failed: errno ${errno()}`);
}

/**
 * `exec FD` (PTY mode only): a process of bwrap's session (the one that holds the terminal)
 * takes a process group of its own, the terminal's foreground one, then execs into the
 * workload: same pid, default signal dispositions, the exact env, argv[0] as given, only fds
 * 0–2. An exec that fails is reported on the link before exiting.
 */
function exec(link: number): number {
  const line = new LineReader(link).next();
  if (line === null) return 1;
  const request = JSON.parse(line) as { program: string; argv: string[]; env: Record<string, string> };
  const reply = (code: number, message: string) => {
    send(link, { code, message });
    return code;
  };
  try {
    takeForeground(link);
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
    const failure = launchError(request.argv[0], error);
    return reply(failure.code, failure.message);
  }
  return 1;
}

// argv: the runtime, this file, then the mode and its descriptor.
const [mode, fd] = [process.argv.at(-2), Number(process.argv.at(-1))];
process.exit(mode === "init" ? await init(fd) : mode === "exec" ? exec(fd) : 2);
