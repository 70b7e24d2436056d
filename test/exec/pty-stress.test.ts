/**
 * The heavy PTY checks of issue 5: a daemon that stops reading fd 1 must neither grow the
 * wrapper without bound nor delay signals, and many sequential PTY execs leak nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { listProcesses } from "../../src/platform/process.ts";
import type { ExecHandle } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { killLeftovers, startPty, workloadOf } from "../support/pty.ts";
import { signalFrame } from "../../kit/envelope.ts";
import { markedPids, statusField } from "../support/procs.ts";
import { StdoutFifo } from "../support/fifo.ts";
import { until } from "../support/poll.ts";
import { linuxOnly } from "../support/platform.ts";
import { cannotContain } from "../support/containment.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc). */
const PROC = linuxOnly("exec/pty-stress.test.ts, written bytes, fds and leftovers read from /proc", "/proc");
/** Set where the held-back-output tests cannot run: the stop is made under the cgroup's freezer. */
const NO_CGROUP = PROC || cannotContain("cgroup", "exec/pty-stress.test.ts, output held back while fd 1 is full");

// Each test spawns the compiled binary and real PTYs; give a loaded 2-core machine room.
setDefaultTimeout(20_000);

let ws: ReadyWorkspace;
/** Where the stall tests run: a held-back terminal needs the freezer of cgroup containment (docs/protocol.md, PTY). */
let contained: { cgroup?: ReadyWorkspace; "process-group": ReadyWorkspace } = {} as never;

beforeAll(async () => {
  ws = await readyWorkspace("pty-stress");
  contained = {
    ...(NO_CGROUP ? {} : { cgroup: await readyWorkspace("pty-stress-cgroup", "seed", { containment: "cgroup" }) }),
    "process-group": await readyWorkspace("pty-stress-pgroup", "seed", { containment: "process-group" }),
  };
});

afterEach(async () => {
  await killLeftovers();
});

afterAll(() => {
  ws?.cleanup();
  contained.cgroup?.cleanup();
  contained["process-group"]?.cleanup();
});

const MiB = 1024 * 1024;

/** A PTY exec of `on` whose stdout goes to a fresh FIFO. */
function startStallable(argv: string[], on: ReadyWorkspace): { handle: ExecHandle; fifo: StdoutFifo } {
  const fifo = new StdoutFifo(tmpdir());
  const handle = startPty(on, argv, {}, { stdoutFd: fifo.writeFd });
  fifo.handedOver();
  return { handle, fifo };
}

/**
 * The wrapper's peak RSS while the daemon stalls: bounded, not growing with the 256 MiB it
 * cannot deliver. About 52–57 MiB here (the binary's pages are ~28 of it); a full suite run on
 * the loaded 2-core machine once saw 68 MiB (more output read before the stop landed), so the
 * bound is 96 MiB: far below what holding the output would take.
 */
const PEAK_BOUND_KIB = 96 * 1024;

/** Samples the wrapper's peak RSS (VmHWM, kB) until it exits; resolves with the last value seen. */
async function peakRss(pid: number, until: Promise<unknown>): Promise<number> {
  let peak = 0;
  let done = false;
  void until.then(() => (done = true));
  while (!done) {
    try {
      peak = Math.max(peak, Number.parseInt(statusField(pid, "VmHWM") ?? "0", 10));
    } catch {
      break;
    }
    await Bun.sleep(50);
  }
  return peak;
}

/** Bytes a process has written so far (/proc/<pid>/io). */
function wchar(pid: number): number {
  return Number(/wchar: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, "latin1"))?.[1]);
}

describe.skipIf(NO_CGROUP)("cgroup containment: a daemon that stops reading fd 1", () => {
  test("stalled 3 s while the workload prints 256 MiB: wrapper peak RSS < 96 MiB and every byte arrives", async () => {
    const size = 256 * MiB;
    const { handle, fifo } = startStallable(["head", "-c", String(size), "/dev/zero"], contained.cgroup!);
    const exited = new Promise((resolve) => handle.child.once("exit", resolve));
    const peak = peakRss(handle.pid, exited);
    await handle.waitEvent("started");
    const workload = await workloadOf(handle);
    await until("the first output", () => (fifo.readAvailable(), fifo.bytes > 0));
    // The daemon stops reading for 3 s.
    await Bun.sleep(2800);
    // The stall reached the workload: its write count stands still.
    const before = wchar(workload.pid);
    await Bun.sleep(200);
    expect(wchar(workload.pid) - before, "the workload kept writing: its output was not throttled").toBeLessThan(1 * MiB);
    await fifo.drain();
    const result = await handle.done;
    expect(fifo.bytes).toBe(size);
    expect(fifo.nonZero).toBe(0);
    expect(result.violation).toBeNull();
    expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: 0, signal: null } as never);
    const peakKiB = await peak;
    expect(peakKiB).toBeGreaterThan(0);
    expect(peakKiB).toBeLessThan(PEAK_BOUND_KIB);
  }, 60_000);

  // No wall-clock assertion (noisy machines): the exit event must arrive while the daemon is
  // still not reading, i.e. long before the stall would end. Measured: ~270 ms.
  test("a SIGTERM frame sent during the stall ends the workload, reported by the exit event before reading resumes", async () => {
    const { handle, fifo } = startStallable(["head", "-c", String(256 * MiB), "/dev/zero"], contained.cgroup!);
    await handle.waitEvent("started");
    const workload = await workloadOf(handle);
    await until("the first output", () => (fifo.readAvailable(), fifo.bytes > 0));
    await Bun.sleep(1000);
    const before = wchar(workload.pid);
    await Bun.sleep(200);
    expect(wchar(workload.pid) - before, "the workload kept writing: its output was not throttled").toBeLessThan(1 * MiB);
    handle.sendControl(signalFrame("SIGTERM"));
    const exit = await handle.waitEvent("exit");
    expect(exit).toEqual({ type: "exit", protocolVersion: 1, code: null, signal: "SIGTERM" } as never);
    expect(existsSync(`/proc/${workload.pid}`) && listProcesses().some((p) => p.pid === workload.pid && p.state !== "Z")).toBe(false);
    // Still stalled: nothing was lost by reporting first, the tail follows once the daemon reads.
    await fifo.drain();
    const result = await handle.done;
    expect(result.violation).toBeNull();
    expect(result.signal).toBe("SIGTERM");
    expect(fifo.nonZero).toBe(0);
  }, 60_000);
});

/**
 * Without a freezer only a terminal without output processing can be stopped without losing a
 * byte (docs/protocol.md, PTY): a raw-mode workload is still held back, cooked output is buffered.
 */
describe.skipIf(PROC)("process-group containment: a daemon that stops reading fd 1", () => {
  test("a raw-mode workload (stty -opost) is held back: its writes stand still, peak RSS < 96 MiB, every byte arrives", async () => {
    const size = 128 * MiB;
    const { handle, fifo } = startStallable(["sh", "-c", `stty -opost && exec head -c ${size} /dev/zero`], contained["process-group"]);
    const exited = new Promise((resolve) => handle.child.once("exit", resolve));
    const peak = peakRss(handle.pid, exited);
    await handle.waitEvent("started");
    await until("the first output", () => (fifo.readAvailable(), fifo.bytes > 0));
    // `exec head`: the workload's pid is head's.
    const workload = await workloadOf(handle);
    await Bun.sleep(1500);
    const before = wchar(workload.pid);
    await Bun.sleep(200);
    expect(wchar(workload.pid) - before, "the workload kept writing: its output was not throttled").toBeLessThan(1 * MiB);
    await fifo.drain();
    const result = await handle.done;
    expect(result.violation).toBeNull();
    expect(fifo.bytes).toBe(size);
    expect(fifo.nonZero).toBe(0);
    expect(await peak).toBeLessThan(PEAK_BOUND_KIB);
  }, 60_000);

  test("cooked output is buffered, not held back, and every byte arrives once the daemon reads", async () => {
    const size = 32 * MiB;
    const { handle, fifo } = startStallable(["head", "-c", String(size), "/dev/zero"], contained["process-group"]);
    await handle.waitEvent("started");
    await until("the first output", () => (fifo.readAvailable(), fifo.bytes > 0));
    // The daemon stops reading; the workload still finishes, its output held by the wrapper.
    const exit = await handle.waitEvent("exit");
    expect(exit).toEqual({ type: "exit", protocolVersion: 1, code: 0, signal: null } as never);
    await fifo.drain();
    const result = await handle.done;
    expect(result.violation).toBeNull();
    expect(fifo.bytes).toBe(size);
    expect(fifo.nonZero).toBe(0);
  }, 60_000);
});

const RUNS = 200;

/** Processes whose parent is this test process. */
const children = () => listProcesses().filter((p) => p.ppid === process.pid).map((p) => p.pid);
const openFds = () => readdirSync("/proc/self/fd").length;
/** The change time of a /dev/pts entry, which tells one PTY instance from a later one of the same number. */
const ptsCtime = (path: string) => statSync(path, { bigint: true }).ctimeNs;

test.skipIf(PROC)(`no PTY, fd or process leaks after ${RUNS} sequential PTY execs`, async () => {
  const childrenBefore = children();
  const fdsBefore = openFds();
  const used: { path: string; ctime: bigint }[] = [];
  for (let i = 0; i < RUNS; i++) {
    const handle = startPty(ws, ["/bin/sh", "-c", "tty; read x"]);
    await handle.waitStdout("\r\n");
    const path = handle.stdoutText().trim();
    expect(path).toMatch(/^\/dev\/pts\/\d+$/);
    used.push({ path, ctime: ptsCtime(path) });
    handle.write("\n");
    const result = await handle.done;
    expect(result.violation).toBeNull();
    expect(result.code).toBe(0);
  }
  await Bun.sleep(200);
  // Other programs on this machine may reuse the numbers meanwhile; the same instance must be gone.
  const leaked = used.filter(({ path, ctime }) => existsSync(path) && ptsCtime(path) === ctime);
  expect(leaked).toEqual([]);
  expect(children()).toEqual(childrenBefore);
  expect(markedPids()).toEqual([]);
  expect(openFds()).toBeLessThanOrEqual(fdsBefore + 2);
}, 180_000);
