/**
 * The launch gate of process-group containment. Without a cgroup, the workload's pid is all
 * that identifies it, and a wrapper killed between spawning it and recording that pid would
 * leave it running unseen. So the wrapper spawns this gate instead: the runtime's own embedded
 * engine, blocked reading fd 3. Only once the gate's pid is on record does the wrapper send
 * it the program, argv and env; the gate then execve()s the workload in place (same pid, same
 * start time, same session). If the wrapper dies first, fd 3 reaches EOF and the gate exits
 * without running anything.
 *
 * The gate's own env is fixed (the workload's env travels on fd 3, never in argv or in the
 * gate's environment), it reads no .env or bunfig.toml, and before execve it closes fds 3
 * and 4 and restores the default action of the signals Bun ignores (SIGPIPE, SIGXFSZ), so
 * the workload gets exactly what a direct spawn gives it. An execve failure travels back on
 * fd 4, reopened close-on-exec so that EOF there means the workload is running.
 */
import type { Subprocess } from "bun";
import { closeSync, read } from "node:fs";
import { writeAll } from "../output.ts";
import { makePipe } from "../platform/libc/descriptors.ts";
import { isLinux } from "../platform/os.ts";

/** The gate's environment: the embedded engine's switch, nothing else. */
export const GATE_ENV: Record<string, string> = { BUN_BE_BUN: "1" };

/** How the gate reopens fd 4 close-on-exec (Linux: through /proc; macOS: /dev/fd, unverified). */
const STATUS_PATH = isLinux ? "/proc/self/fd/4" : "/dev/fd/4";

/**
 * The gate program (run with `-e`). Exit 125: the wrapper went away before it was recorded. It
 * runs alone, without any module of ours, so its one errno check is written out.
 */
const GATE_SOURCE = `
const fs = require("fs");
const chunk = Buffer.alloc(65536);
const parts = [];
for (;;) {
  let n = 0;
  // Whatever stops the read (EBADF, EIO), the gate learns nothing it may run: it runs nothing.
  try { n = fs.readSync(3, chunk, 0, chunk.length, null); } catch (_) { process.exit(125); }
  if (n === 0) process.exit(125);
  parts.push(Buffer.from(chunk.subarray(0, n)));
  if (chunk[n - 1] === 10) break;
}
const spec = JSON.parse(Buffer.concat(parts).toString("utf8"));
const status = fs.openSync(${JSON.stringify(STATUS_PATH)}, "w");
fs.closeSync(3);
fs.closeSync(4);
for (const name of ["SIGPIPE", "SIGXFSZ"]) { const f = () => {}; process.on(name, f); process.removeListener(name, f); }
process.emitWarning = () => {};
try {
  process.execve(spec.program, spec.argv, spec.env);
} catch (error) {
  fs.writeSync(status, JSON.stringify({ code: error.code === "ENOENT" ? 127 : 126, message: String(error.message) }) + "\\n");
  process.exit(127);
}
`;

/** argv of the gate: this executable as its embedded Bun, with no config or .env loading. */
export function gateArgv(): string[] {
  return [process.execPath, "--no-env-file", "--config=/dev/null", "--no-install", "-e", GATE_SOURCE];
}

/** What the gate is told to become. */
interface GateSpec {
  program: string;
  argv: string[];
  env: Record<string, string>;
}

/** Why the gate could not become the workload: the shell-convention code (127 not found, 126 not executable) and the error. */
type GateFailure = { code: number; message: string };

/**
 * One gate: its two pipes (made with it), then spawned and blocked; the wrapper records its
 * pid, then opens it (it becomes the workload) or abandons it (it exits without running anything).
 */
export class Gate {
  readonly #spec = makePipe();
  readonly #status = makePipe();
  /** The gate, once spawned. */
  proc!: Subprocess;

  /**
   * Spawns the gate in `cwd`, on the terminal given or in a session of its own, with fds 3 and
   * 4 its ends of the two pipes. Throws what the spawn threw; the pipes are closed then.
   */
  spawn(cwd: string, terminal: Bun.TerminalOptions | null): Subprocess {
    const [specRead, specWrite] = this.#spec;
    const [statusRead, statusWrite] = this.#status;
    try {
      const stdio: ["inherit", "inherit", "inherit", number, number] = ["inherit", "inherit", "inherit", specRead, statusWrite];
      this.proc = Bun.spawn(gateArgv(), { cwd, env: GATE_ENV, stdio, ...(terminal ? { terminal } : { detached: true }) });
      return this.proc;
    } catch (error) {
      closeSync(specWrite);
      closeSync(statusRead);
      throw error;
    } finally {
      closeSync(specRead);
      closeSync(statusWrite);
    }
  }

  /** Sends what to become; resolves once it is the workload (null), or with why it could not become it. */
  async open(spec: GateSpec): Promise<GateFailure | null> {
    try {
      openGate(this.#spec[1], spec);
      return await gateOutcome(this.#status[0]);
    } catch (error) {
      return { code: 126, message: (error as Error).message };
    }
  }

  /** Never opened: fd 3 reaches EOF, so the gate exits without running anything; resolves once it has. */
  async abandon(): Promise<void> {
    closeSync(this.#spec[1]);
    await Promise.all([gateOutcome(this.#status[0]), this.proc.exited]);
  }
}

/** Opens the gate: sends the spec and closes fd 3's other end. Throws when the gate is gone (EPIPE). */
function openGate(specFd: number, spec: GateSpec): void {
  try {
    writeAll(specFd, `${JSON.stringify(spec)}\n`);
  } finally {
    closeSync(specFd);
  }
}

/**
 * Waits until the gate has become the workload (EOF on fd 4) or failed to: then the execve
 * error and the shell-convention code (127 not found, 126 not executable).
 */
async function gateOutcome(statusFd: number): Promise<GateFailure | null> {
  const text = await readToEnd(statusFd);
  if (text === "") return null;
  try {
    return JSON.parse(text) as { code: number; message: string };
  } catch (error) {
    // Not the gate's JSON line (it died writing it, or something else wrote fd 4): said as it is.
    if (!(error instanceof SyntaxError)) throw error;
    return { code: 126, message: `the launch gate failed: ${text.trim()}` };
  }
}

/** Reads a descriptor to EOF without blocking the event loop, then closes it. */
function readToEnd(fd: number): Promise<string> {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(4096);
  return new Promise((resolve, reject) => {
    const next = () =>
      read(fd, buffer, 0, buffer.length, null, (error, n) => {
        if (error) {
          closeSync(fd);
          reject(error);
        } else if (n === 0) {
          closeSync(fd);
          resolve(Buffer.concat(chunks).toString("utf8"));
        } else {
          chunks.push(Buffer.from(buffer.subarray(0, n)));
          next();
        }
      });
    next();
  });
}
