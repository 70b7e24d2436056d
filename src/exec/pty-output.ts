import { closeSync, constants, fstatSync, openSync, readlinkSync } from "node:fs";
import { hasErrno, PATH_MISSING, PEER_GONE, PROCESS_GONE, TERMINAL_HUNG_UP, tolerating } from "../platform/errno.ts";
import { setTerminalOutput } from "../platform/libc/terminal.ts";
import { readProcess } from "../platform/process.ts";
import { isLinux } from "../platform/os.ts";
import { within } from "../within.ts";
import { processesOutput } from "../platform/tty.ts";

/** The wrapper's stdout. In PTY mode only the wrapper writes it, so a non-blocking sink is safe. */
const STDOUT_FD = 1;
/** Character-device major of Unix98 PTY slaves (/dev/pts/N) on Linux. */
const PTS_MAJOR = 136;
/** Finding the slave needs /proc (Linux); elsewhere output is not throttled. */

/** What holding output back needs of the execution: a way to hold its processes still. */
export interface OutputScope {
  quiesce(fn: () => void): Promise<boolean>;
}

/** What holding output back needs of the terminal: its output mode (c_oflag). */
export interface OutputTerminal {
  readonly outputFlags: number;
}

/**
 * Copies PTY output to fd 1 unchanged, with backpressure: Bun's terminal `data` callback cannot
 * be paused, so when fd 1 is full the terminal's own output is suspended with tcflow(TCOOFF)
 * on the slave side (the workload's writes then block in the kernel), and restarted once the
 * sink has drained. Memory stays bounded and the event loop stays free for signals.
 *
 * Stopping a terminal while a process writes to it loses bytes under output processing (OPOST,
 * the default): Linux's n_tty checks for room, and a stop landing before its write makes that
 * write a silent no-op (a "\r\n" or a single byte gone). So the stop is made while the
 * execution's processes are frozen (its cgroup), when none can be inside a write. Without a
 * freezer only a terminal without OPOST (raw mode) is stopped; other output is not throttled.
 */
export class PtyOutput {
  readonly #sink = Bun.file(STDOUT_FD).writer({ highWaterMark: 64 * 1024 });
  #slave = -1;
  /** The workload whose terminal to find; 0 once released (holding the slave blocks EOF). */
  #pid = 0;
  #scope: OutputScope | null = null;
  #terminal: OutputTerminal | null = null;
  /** Whether output should be stopped (a flush of fd 1 is pending), and whether it is. */
  #wanted = false;
  #suspended = false;
  /** The change of the terminal's state under way, if any. */
  #changing: Promise<void> | null = null;
  /** The flush fd 1 has not completed yet; null when everything written was accepted. */
  #pending: Promise<unknown> | null = null;
  /** Set once fd 1 failed (the daemon closed it): from then on output is discarded. */
  #lost = false;
  /** A failure of fd 1 other than the daemon going away: output is discarded too, and finish() throws it. */
  #failure: unknown = null;
  #masterClosed: () => void = () => {};
  /** Resolves when the PTY reported EOF/EIO on the master: every byte has been read. */
  readonly masterClosed = new Promise<void>((resolve) => (this.#masterClosed = resolve));

  /**
   * Opens the workload's terminal (slave side) so output can be suspended. Without it (no
   * /proc, or the workload already dropped its terminal) output simply is not throttled.
   */
  attach(pid: number, scope: OutputScope, terminal: OutputTerminal): void {
    this.#pid = pid;
    this.#scope = scope;
    this.#terminal = terminal;
    this.#slave = openSlave(pid);
  }

  /** The terminal `data` callback. */
  write(chunk: Uint8Array): void {
    if (this.#lost) return;
    try {
      const written = this.#sink.write(chunk);
      if (written instanceof Promise) written.catch((error: unknown) => this.#lose(error));
      this.#track(this.#sink.flush());
    } catch (error) {
      this.#lose(error);
    }
  }

  /** The terminal `exit` callback. */
  onMasterClosed(): void {
    this.#masterClosed();
  }

  /** Waits up to `ms` for the master to close; returns whether it did. */
  async waitMasterClosed(ms: number): Promise<boolean> {
    return within(this.masterClosed.then(() => true), ms, false);
  }

  /** Restarts output and drops our hold on the slave: while we hold it the master never reports EOF. */
  async releaseSlave(): Promise<void> {
    this.#pid = 0;
    this.#wanted = false;
    await this.#change();
    if (this.#slave < 0) return;
    closeSync(this.#slave);
    this.#slave = -1;
  }

  /** Waits up to `ms` for fd 1 to accept everything written so far; returns whether it did. */
  async settle(ms: number): Promise<boolean> {
    if (this.#lost || !this.#pending) return true;
    return within(this.#drained().then(() => true), ms, false);
  }

  /** Writes out everything received, however long the daemon takes to read it, then closes the sink. */
  async finish(): Promise<void> {
    if (!this.#lost) {
      try {
        await this.#drained();
        await this.#sink.end();
      } catch (error) {
        this.#lose(error);
      }
    }
    if (this.#failure !== null) throw this.#failure;
  }

  /** Resolves once no flush is pending any more. */
  async #drained(): Promise<void> {
    while (this.#pending && !this.#lost) await this.#pending;
  }

  /** Suspends the terminal while a flush is pending; the flush's completion re-checks. */
  #track(flushed: number | Promise<number>): void {
    if (!(flushed instanceof Promise)) {
      this.#pending = null;
      this.#setRunning(true);
      return;
    }
    if (this.#pending) {
      // Already waiting on an earlier flush, whose completion re-checks; only failures matter here.
      flushed.catch((error: unknown) => this.#lose(error));
      return;
    }
    this.#setRunning(false);
    this.#pending = flushed.then(
      () => {
        this.#pending = null;
        if (!this.#lost) this.#track(this.#sink.flush());
      },
      (error: unknown) => this.#lose(error),
    );
  }

  /**
   * fd 1 failed: discard output, and never leave the workload blocked on a stopped terminal.
   * The daemon closing it (PEER_GONE) is expected; any other failure is kept for finish().
   */
  #lose(error: unknown): void {
    if (!hasErrno(error, PEER_GONE)) this.#failure ??= error;
    this.#lost = true;
    this.#pending = null;
    this.#setRunning(true);
  }

  #setRunning(running: boolean): void {
    this.#wanted = !running;
    void this.#change();
  }

  /** Brings the terminal to the wanted state; one change runs at a time, and it follows later wishes. */
  #change(): Promise<void> {
    this.#changing ??= this.#follow().finally(() => (this.#changing = null));
    return this.#changing;
  }

  async #follow(): Promise<void> {
    while (this.#suspended !== this.#wanted) {
      if (!this.#wanted) this.#restart();
      else if (!(await this.#stop())) return;
    }
  }

  /** Stops the terminal's output where that loses nothing (see the class); false when it was not stopped. */
  async #stop(): Promise<boolean> {
    // The child takes its controlling terminal just after becoming a session leader, so the
    // first look (at started) can come too early: look again whenever output must stop.
    if (this.#slave < 0 && this.#pid > 0 && isLinux) this.#slave = openSlave(this.#pid);
    const slave = this.#slave;
    if (slave < 0 || this.#pid === 0 || !this.#scope || !this.#terminal) return false;
    const stop = () => setTerminalOutput(slave, false);
    try {
      if (await this.#scope.quiesce(stop)) return (this.#suspended = true);
      if (processesOutput(this.#terminal.outputFlags)) return false;
      stop();
      return (this.#suspended = true);
    } catch (error) {
      // A terminal hung up cannot be stopped: it is not throttled.
      if (hasErrno(error, TERMINAL_HUNG_UP)) return false;
      throw error;
    }
  }

  #restart(): void {
    // One hung up cannot be restarted, and needs not be: nothing writes to it any more.
    if (this.#slave >= 0) tolerating(TERMINAL_HUNG_UP, undefined, () => setTerminalOutput(this.#slave, true));
    this.#suspended = false;
  }
}

/**
 * The workload's controlling terminal, opened O_NOCTTY: by the device number in
 * /proc/<pid>/stat (/dev/pts/N), else whichever of its fd 0–2 is that device. -1 when none.
 */
function openSlave(pid: number): number {
  const tty = readProcess(pid)?.tty ?? 0;
  if (tty === 0) return -1;
  const major = (tty >> 8) & 0xfff;
  const minor = (tty & 0xff) | ((tty >> 12) & 0xfff00);
  const candidates = major === PTS_MAJOR ? [`/dev/pts/${minor}`] : [];
  for (const fd of [0, 1, 2]) {
    // Not open, or the process is gone: try the next.
    const target = tolerating(PROCESS_GONE, null, () => readlinkSync(`/proc/${pid}/fd/${fd}`));
    if (target !== null) candidates.push(target);
  }
  for (const path of candidates) {
    let fd = -1;
    try {
      fd = openSync(path, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
      if (fstatSync(fd).rdev === tty) return fd;
    } catch (error) {
      // Gone (a pipe:[…] or socket:[…] is no path), not ours (EACCES), or a terminal hung up (EIO, ENXIO): try the next.
      if (!hasErrno(error, [...PATH_MISSING, "EACCES", "ENXIO", ...TERMINAL_HUNG_UP])) throw error;
    }
    if (fd >= 0) closeSync(fd);
  }
  return -1;
}
