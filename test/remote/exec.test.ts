/**
 * `exec` through `--remote` against a real sshd on 127.0.0.1, driven exactly as the daemon
 * drives a local wrapper: the same bytes, events, exit statuses and signals as a local exec,
 * flow control that reaches the remote workload, and no workload left behind when the
 * connection or the local wrapper dies.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecOptions, type ExecResult } from "../support/daemon.ts";
import { masterPid, startSshd, type SshLab } from "../../kit/sshd.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { StdoutFifo } from "../support/fifo.ts";
import { createInput, ok, remoteOp } from "../support/operation.ts";
import { makeRepo } from "../support/git.ts";
import { until } from "../support/poll.ts";
import { processesWith, MARK, killMarked, markedPids, rssKiB } from "../support/procs.ts";
import { linuxOnly } from "../support/platform.ts";
import { withoutSsh } from "../support/tools.ts";

/** Set where the tests marked with it cannot run: they need Linux (the tests' own sshd on 127.0.0.1 and /proc). */
const NO_SSHD = linuxOnly("remote/exec.test.ts", "the tests' own sshd on 127.0.0.1 and /proc") || withoutSsh("remote/exec.test.ts");

setDefaultTimeout(60_000);

/** The env of most workloads here: PATH and the leftover mark. */
const ENV = { PATH, ...MARK };
const MiB = 1024 * 1024;

let lab: SshLab;
let local: ReadyWorkspace;
let scratch: { path: string; cleanup: () => void };
const WS = `rx-${process.pid}`;

// Without sshd every block below is skipped, and there is nothing to start or stop.
if (!NO_SSHD) {
  beforeAll(async () => {
    lab = await startSshd();
    local = await readyWorkspace("rx-local");
    scratch = tempDir("phr-remote-exec-");
    const repo = makeRepo(join(scratch.path, "repo"));
    ok(await remoteOp(lab, "create", WS, { input: createInput(WS, { kind: "host-directory", path: repo }), options: lab.options }));
  });

  afterAll(async () => {
    killMarked();
    await lab.stop();
    local.cleanup();
    scratch.cleanup();
  });
}

/** A unique `sleep` duration: its argv is how a test finds (and proves gone) its workload. */
let tags = 0;
function tag(): string {
  return `${300 + (++tags) / 1000}${String(process.pid % 1000).padStart(3, "0")}`;
}

function remoteExec(argv: string[], fields: Record<string, unknown> = {}, options: ExecOptions = {}) {
  return startExec(WS, envelope(argv, { options: lab.options, ...fields }), { prefix: lab.prefix, ...options });
}

function localExec(argv: string[], fields: Record<string, unknown> = {}, options: ExecOptions = {}) {
  return startExec(local.id, envelope(argv, { options: local.options, ...fields }), options);
}

/** What a daemon compares: bytes, events, the wrapper's status, and a legal lifecycle. */
function seen(result: ExecResult) {
  return { stdout: result.stdout.toString("hex"), events: result.events, code: result.code, signal: result.signal, violation: result.violation };
}

function expectComplete(result: ExecResult, code: number | null, signal: string | null = null): void {
  expect(result.violation).toBeNull();
  expect(result.events).toEqual([
    { type: "started", protocolVersion: 1 },
    { type: "eof", protocolVersion: 1 },
    { type: "exit", protocolVersion: 1, code, signal },
  ] as never);
  expect({ code: result.code, signal: result.signal }).toEqual({ code, signal });
}

const frame = (value: Record<string, unknown>) => `${JSON.stringify({ protocolVersion: 1, ...value })}\n`;

describe.skipIf(NO_SSHD)("pipes, byte for byte the same as a local exec", () => {
  test("stdin to stdout and stderr: every byte value (NUL, 0xff) over 4 MiB, exit code kept", async () => {
    const input = Buffer.alloc(4 * MiB);
    for (let i = 0; i < input.length; i++) input[i] = (i * 7 + (i >> 11)) & 0xff;
    const argv = ["/bin/sh", "-c", "cat; printf 'e\\000\\377' >&2; exit 7"];
    const results: ExecResult[] = [];
    for (const start of [localExec, remoteExec]) {
      const handle = start(argv, { env: ENV });
      handle.write(input);
      handle.closeStdin();
      results.push(await handle.done);
    }
    const [here, there] = results as [ExecResult, ExecResult];
    expect(there.stdout.equals(input)).toBe(true);
    expect(Buffer.from(there.stderr, "latin1").toString("hex")).toBe(Buffer.from(here.stderr, "latin1").toString("hex"));
    expect(seen(there)).toEqual(seen(here));
    expectComplete(there, 7);
  });

  test("8 MiB printed right before exit arrive completely before eof", async () => {
    const size = 8 * MiB;
    const handle = remoteExec(["/bin/sh", "-c", `head -c ${size} /dev/zero; exit 3`], { env: ENV });
    let atEof = -1;
    void handle.waitEvent("eof").then(() => (atEof = handle.stdoutText().length));
    const result = await handle.done;
    expect(atEof).toBe(size);
    expectComplete(result, 3);
  });

  test("the workload sees exactly the envelope env: /usr/bin/env with {X: y} prints X=y", async () => {
    const result = await remoteExec(["/usr/bin/env"], { env: { X: "y" } }).done;
    expect(result.stdout.toString()).toBe("X=y\n");
    expectComplete(result, 0);
  });

  test.each([0, 1, 42, 255])("exit code %d is reported and mirrored", async (code) => {
    const result = await remoteExec(["/bin/sh", "-c", `exit ${code}`]).done;
    expectComplete(result, code);
  });

  test("a program that is not there: exit 127 and no event, like a local exec", async () => {
    const here = await localExec(["no-such-program-x"], { env: ENV }).done;
    const there = await remoteExec(["no-such-program-x"], { env: ENV }).done;
    expect(there.code).toBe(127);
    expect(there.events).toEqual([]);
    expect({ code: there.code, events: there.events }).toEqual({ code: here.code, events: here.events });
    expect(there.stderr).toContain("no-such-program-x");
  });

  test("a secret in env or options appears in no process command line, here or there", async () => {
    const secret = `s3cret-${process.pid}-${Date.now()}`;
    const sleep = tag();
    const handle = remoteExec(["sleep", sleep], { env: { ...ENV, TOKEN: secret }, options: { ...lab.options, lifecycleEnvironment: { K: secret } } });
    await handle.waitEvent("started");
    expect(processesWith(`sleep\u0000${sleep}`).length).toBe(1);
    expect(processesWith(secret)).toEqual([]);
    process.kill(handle.pid, "SIGTERM");
    await handle.done;
  });
});

describe.skipIf(NO_SSHD)("signals the local wrapper receives reach the remote workload", () => {
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    test(`${signal}: {code: null, signal: "${signal}"}, and the local wrapper dies by it too`, async () => {
      const sleep = tag();
      const handle = remoteExec(["sleep", sleep], { env: ENV });
      await handle.waitEvent("started");
      process.kill(handle.pid, signal);
      expectComplete(await handle.done, null, signal);
      expect(processesWith(`sleep\u0000${sleep}`)).toEqual([]);
    });
  }

  test("SIGUSR1, SIGUSR2 and SIGWINCH reach the remote workload's handler; it still ends by SIGTERM", async () => {
    const script = `$|=1; for my $s (qw(USR1 USR2 WINCH)) { $SIG{$s} = sub { print "got $_[0]\\n" } } print "R\\n"; sleep 1 while 1`;
    const handle = remoteExec(["perl", "-e", script], { env: ENV });
    handle.closeStdin();
    await handle.waitStdout("R\n");
    for (const signal of ["SIGUSR1", "SIGUSR2", "SIGWINCH"] as const) {
      process.kill(handle.pid, signal);
      await handle.waitStdout(`got ${signal.slice(3)}\n`);
    }
    process.kill(handle.pid, "SIGTERM");
    expectComplete(await handle.done, null, "SIGTERM");
  });

  test("a death by signal 35 on the remote host is {code: 163, signal: null}, mirrored locally", async () => {
    const handle = remoteExec(["/bin/sh", "-c", "kill -35 $$"], { env: ENV });
    handle.closeStdin();
    expectComplete(await handle.done, 163, null);
  });

  test("SIGTERM to `sh -c 'sleep … & wait'` leaves no sleep behind on the remote host", async () => {
    const sleep = tag();
    const handle = remoteExec(["sh", "-c", `sleep ${sleep} & wait`], { env: ENV });
    await handle.waitEvent("started");
    await until("the background sleep runs", () => processesWith(`sleep\u0000${sleep}`).length === 1);
    process.kill(handle.pid, "SIGTERM");
    expectComplete(await handle.done, null, "SIGTERM");
    expect(processesWith(`sleep\u0000${sleep}`)).toEqual([]);
  });

  const EARLY_DELAYS = process.env.PASEO_STRESS === "1" ? Array.from({ length: 60 }, (_, i) => (i * 7) % 150) : [0, 5, 30, 100];
  test(`a SIGTERM sent right after spawn, before started, still ends the workload by SIGTERM (${EARLY_DELAYS.length} trials)`, async () => {
    for (const delay of EARLY_DELAYS) {
      const sleep = tag();
      const handle = remoteExec(["sleep", sleep], { env: ENV });
      await Bun.sleep(delay);
      process.kill(handle.pid, "SIGTERM");
      const result = await handle.done;
      expect(result.signal).toBe("SIGTERM");
      if (result.events.length > 0) expectComplete(result, null, "SIGTERM");
      expect(processesWith(`sleep\u0000${sleep}`)).toEqual([]);
    }
  });
});

describe.skipIf(NO_SSHD)("PTY through --remote", () => {
  const pty = { stdio: { kind: "pty", rows: 24, cols: 80 }, env: ENV };
  const ptyExec = (argv: string[], options: ExecOptions = {}) => {
    const handle = remoteExec(argv, pty, { keepControls: true, ...options });
    void handle.waitEvent("exit").then(() => {
      handle.closeStdin();
      handle.closeControls();
    });
    return handle;
  };

  test("fd 0 and fd 1 are a terminal of 24x80; after resize(99,41) and its ack the next line sees 99x41", async () => {
    const handle = ptyExec(["/bin/sh", "-c", 'test -t 0 && test -t 1 && stty size; IFS= read -r line; set -- $(stty size); printf "|%s|%sx%s\\n" "$line" "$2" "$1"']);
    await handle.waitStdout("24 80");
    handle.sendControl(frame({ type: "resize", id: 1, rows: 41, cols: 99 }));
    await handle.waitEvent("resized");
    handle.write("héllo\n");
    const result = await handle.done;
    expect(result.stdout.toString()).toContain("|héllo|99x41");
    expect(result.violation).toBeNull();
    expect(result.events.map((e) => e.type)).toEqual(["started", "resized", "eof", "exit"]);
    expect(result.events[1]).toEqual({ type: "resized", protocolVersion: 1, id: 1 } as never);
  });

  test("exit 9 is {code: 9, signal: null}; SIGTERM and SIGKILL frames end the workload by them", async () => {
    const nine = await ptyExec(["/bin/sh", "-c", "exit 9"]).done;
    expectComplete(nine, 9);
    for (const signal of ["SIGTERM", "SIGKILL"]) {
      const handle = ptyExec(["sleep", tag()]);
      await handle.waitEvent("started");
      handle.sendControl(frame({ type: "signal", signal }));
      expectComplete(await handle.done, null, signal);
    }
  });

  test("a signal frame in the same write as the envelope (before started) still ends the workload", async () => {
    const sleep = tag();
    const handle = ptyExec(["sleep", sleep], { withEnvelope: frame({ type: "signal", signal: "SIGTERM" }) });
    expectComplete(await handle.done, null, "SIGTERM");
    expect(processesWith(`sleep\u0000${sleep}`)).toEqual([]);
  });

  test("2 MiB printed right before exit arrive completely before eof", async () => {
    const size = 2 * MiB;
    const handle = ptyExec(["/bin/sh", "-c", `head -c ${size} /dev/zero; exit 3`]);
    let atEof = -1;
    void handle.waitEvent("eof").then(() => (atEof = handle.stdoutText().length));
    const result = await handle.done;
    expect(atEof).toBe(size);
    expect(result.stdout.length).toBe(size);
    expectComplete(result, 3);
  });

  test("NUL and 0xff pass unchanged both ways in raw mode", async () => {
    const handle = ptyExec(["/bin/sh", "-c", "stty raw -echo; printf R; head -c 4 | od -An -tx1"]);
    await handle.waitStdout("R");
    handle.write(Buffer.from([0x00, 0xff, 0x41, 0x0a]));
    const result = await handle.done;
    expect(result.stdout.toString()).toContain("00 ff 41 0a");
    expect(result.violation).toBeNull();
  });
});

/** The exec-remote process serving workspace WS on the "remote host", once it runs. */
function execRemotePid(): number | undefined {
  return processesWith(`exec-remote\u0000--workspace-id\u0000${WS}`)[0];
}

describe.skipIf(NO_SSHD)("a daemon that stops reading fd 1", () => {
  test("stalled while the workload prints 128 MiB: both sides stay small, the workload is held, every byte arrives", async () => {
    const size = 128 * MiB;
    const fifo = new StdoutFifo(tmpdir());
    const handle = remoteExec(["head", "-c", String(size), "/dev/zero"], { env: ENV }, { stdoutFd: fifo.writeFd });
    fifo.handedOver();
    await handle.waitEvent("started");
    await until("the first output", () => (fifo.readAvailable(), fifo.bytes > 0));
    const server = execRemotePid()!;
    const workload = processesWith(`head\u0000-c\u0000${size}`)[0]!;
    // The daemon stops reading.
    await Bun.sleep(1500);
    // A workload that already exited wrote everything: the stall never reached it.
    const wrote = () => (existsSync(`/proc/${workload}/io`) ? Number(/wchar: (\d+)/.exec(readFileSync(`/proc/${workload}/io`, "latin1"))?.[1]) : size);
    const before = wrote();
    await Bun.sleep(300);
    expect(wrote() - before, "the workload kept writing: the stall did not reach it").toBeLessThan(MiB);
    expect(before, "the workload wrote most of its output into buffers while the daemon was not reading").toBeLessThan(size / 4);
    const [localRss, remoteRss] = [rssKiB(handle.pid)!, rssKiB(server)!];
    expect(localRss).toBeLessThan(96 * 1024);
    expect(remoteRss).toBeLessThan(96 * 1024);
    await fifo.drain();
    const result = await handle.done;
    expect(fifo.bytes).toBe(size);
    expect(fifo.nonZero).toBe(0);
    expectComplete(result, 0);
  });
});

/** `signal --signal SIGKILL` for an exec of WS through `--remote` (a fresh ssh call, as the daemon's cleanup). */
async function signalKill(execId: string): Promise<number | null> {
  const args = ["signal", "--workspace-id", WS, "--exec-id", execId, "--signal", "SIGKILL"];
  const result = await runBinary([...lab.prefix, ...args], { stdin: `${JSON.stringify({ protocolVersion: 1, options: lab.options })}\n` });
  if (result.code !== 0) console.error(result.stderr);
  return result.code;
}

describe.skipIf(NO_SSHD)("the connection or the local wrapper dies mid-exec", () => {
  test("the connection is cut: error event and exit 1 here, the remote workload is gone, `signal` is idempotent", async () => {
    const sleep = tag();
    const env = envelope(["sh", "-c", `sleep ${sleep} & wait`], { options: lab.options, env: ENV });
    const handle = startExec(WS, env, { prefix: lab.prefix });
    await handle.waitEvent("started");
    await until("the remote sleep runs", () => processesWith(`sleep\u0000${sleep}`).length === 1);
    const master = masterPid(lab.localHome, lab.configFile);
    expect(master).not.toBeNull();
    process.kill(master!, "SIGKILL");
    const result = await handle.done;
    expect(result.code).toBe(1);
    expect(result.events.map((e) => e.type)).toEqual(["started", "error"]);
    expect((result.events[1] as { message: string }).message).toContain("lost the connection");
    await until("the remote workload is gone", () => processesWith(`sleep\u0000${sleep}`).length === 0);
    expect(await signalKill(env.execId as string)).toBe(0);
    expect(await signalKill(env.execId as string)).toBe(0);
  });

  test("the local wrapper is SIGKILLed after started: `signal --signal SIGKILL` over a fresh connection ends the remote workload, twice", async () => {
    const sleep = tag();
    const env = envelope(["sh", "-c", `sleep ${sleep} & wait`], { options: lab.options, env: ENV });
    const handle = startExec(WS, env, { prefix: lab.prefix });
    await handle.waitEvent("started");
    await until("the remote sleep runs", () => processesWith(`sleep\u0000${sleep}`).length === 1);
    process.kill(handle.pid, "SIGKILL");
    await handle.exited;
    expect(await signalKill(env.execId as string)).toBe(0);
    expect(processesWith(`sleep\u0000${sleep}`)).toEqual([]);
    expect(await signalKill(env.execId as string)).toBe(0);
  });
});

describe.skipIf(NO_SSHD)("the later dialect", () => {
  test("an exec with runtimeInstanceId runs like a local one; a cut connection still ends its workload", async () => {
    const instance = "cd".repeat(32);
    const id = `${WS}-later`;
    const input = createInput(id, { kind: "directory", path: join(scratch.path, "repo") });
    ok(await remoteOp(lab, "create", id, { runtimeInstanceId: instance, input, options: lab.options }));
    const later = (argv: string[]) =>
      envelope(argv, { runtimeInstanceId: instance, purpose: { kind: "workspace-script" }, options: lab.options, env: ENV });
    const done = await startExec(id, later(["/bin/sh", "-c", "printf later; exit 3"]), { prefix: lab.prefix }).done;
    expect(done.stdout.toString()).toBe("later");
    expectComplete(done, 3);
    const sleep = tag();
    const handle = startExec(id, later(["sleep", sleep]), { prefix: lab.prefix });
    await handle.waitEvent("started");
    process.kill(masterPid(lab.localHome, lab.configFile)!, "SIGKILL");
    expect((await handle.done).code).toBe(1);
    await until("the remote workload is gone", () => processesWith(`sleep\u0000${sleep}`).length === 0);
    ok(await remoteOp(lab, "destroy", id, { runtimeInstanceId: instance, options: lab.options }));
  });
});

describe.skipIf(NO_SSHD)("paused workspaces", () => {
  test("an exec in a paused workspace is refused the way a local one is", async () => {
    ok(await remoteOp(lab, "pause", WS, { options: lab.options }));
    try {
      const result = await remoteExec(["/bin/true"]).done;
      expect(result.code).toBe(1);
      expect(result.events).toEqual([]);
      expect(result.stderr).toContain("paused");
    } finally {
      ok(await remoteOp(lab, "resume", WS, { options: lab.options }));
    }
  });
});

test.skipIf(NO_SSHD)("nothing this file started is left running on the remote side", async () => {
  await until("every exec-remote ended", () => execRemotePid() === undefined);
  expect(markedPids()).toEqual([]);
});
