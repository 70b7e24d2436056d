/**
 * The store's write lock under contention (src/store/writer-lock.ts). Before it, writers waited
 * in SQLite's busy handler: polling with sleeps up to 100 ms, in no order, for at most
 * busy_timeout (10 s). With 200 execs starting at once an unlucky one lost the lock to
 * newcomers until its 10 s ran out and was refused with "database is locked".
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { spawn as spawnChild } from "node:child_process";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { tempDir } from "../../kit/scratch.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { storePath } from "../../src/store/db.ts";
import { withWriterLock, WriterLockStalled, writerLockPath } from "../../src/store/writer-lock.ts";
import { stressOnly } from "../support/platform.ts";

const WRITER = join(import.meta.dir, "..", "support", "store-writer.ts");
/** Longer than the busy_timeout writers used to give up after (10 s). */
const HOLD_MS = 11_000;
/** Execs started at once: modest by default, issue 14's 200 with PASEO_STRESS=1. */
const CONCURRENT = process.env.PASEO_STRESS === "1" ? 200 : 24;

/** A process of this test holding the write lock of `home`'s store for `ms`; resolves once it holds it. */
async function holdStore(home: string, ms: number): Promise<{ pid: number; done: Promise<number | null> }> {
  const child = spawnChild(process.execPath, [WRITER, "transaction", home, String(ms)], { stdio: ["ignore", "pipe", "inherit"] });
  const done = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("held") && resolve());
    child.on("exit", (code) => reject(new Error(`the store writer exited (${code}) before it held the lock`)));
  });
  return { pid: child.pid!, done };
}

function runExec(ws: ReadyWorkspace, argv: string[]): Promise<ExecResult> {
  const handle = startExec(ws.id, envelope(argv, { options: ws.options }));
  handle.closeStdin();
  return handle.done;
}

/** What went wrong with an exec that should have run `argv` to a clean end, or null. */
function problem(result: ExecResult): string | null {
  const started = result.events.some((event) => event.type === "started");
  if (result.code === 0 && started && result.violation === null && result.stderr === "") return null;
  return `exit ${result.code} ${result.signal ?? ""}, started ${started}, violation ${result.violation}: ${result.stderr}`;
}

describe("execs waiting for the store's write lock", () => {
  let ws: ReadyWorkspace;
  beforeAll(async () => {
    ws = await readyWorkspace("wlock");
  });
  afterAll(() => ws.cleanup());

  test(`execs wait for a writer that holds the store longer than SQLite's busy_timeout, then all run`, async () => {
    const writer = await holdStore(ws.home, HOLD_MS);
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => runExec(ws, ["/bin/echo", `waited ${i}`])));
    expect(await writer.done).toBe(0);
    expect(results.map(problem)).toEqual([null, null, null, null]);
    expect(results.map((r) => r.stdout.toString())).toEqual([0, 1, 2, 3].map((i) => `waited ${i}\n`));
  }, 60_000);

  // 30 s (the stall limit) of waiting: with PASEO_STRESS=1 only; the limit itself is tested below.
  test.skipIf(stressOnly("exec/write-lock.test.ts, the stall limit"))("an exec behind a stopped writer gives up after the stall limit, naming it, and records nothing", async () => {
    const writer = await holdStore(ws.home, 120_000);
    process.kill(writer.pid, "SIGSTOP");
    const execId = `stalled-${process.pid}`;
    let result: ExecResult;
    try {
      const handle = startExec(ws.id, envelope(["/bin/echo", "never"], { options: ws.options, execId }));
      handle.closeStdin();
      result = await handle.done;
    } finally {
      process.kill(writer.pid, "SIGKILL");
      await writer.done;
    }
    expect(result.code).toBe(1);
    expect(result.events).toEqual([]);
    expect(result.stdout.toString()).toBe("");
    expect(result.stderr).toContain(`the store's write lock (${writerLockPath(storePath(realpathSync(ws.home)))}) did not change hands for 30 s; process ${writer.pid} has held it since`);
    const db = new Database(storePath(ws.home), { readonly: true });
    try {
      expect(db.query("SELECT count(*) AS n FROM executions WHERE exec_id = ?").get(execId)).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  }, 90_000);

  test(`${CONCURRENT} execs started at once all start and finish`, async () => {
    const results = await Promise.all(Array.from({ length: CONCURRENT }, () => runExec(ws, ["/bin/true"])));
    expect(results.map(problem).filter((p) => p !== null)).toEqual([]);
  }, 300_000);
});

describe("the writer lock itself", () => {
  let scratch: { path: string; cleanup: () => void };
  let home: string;
  beforeAll(async () => {
    scratch = tempDir("phr-wlock-");
    home = join(scratch.path, "home");
    // A store of its own: made by the writer's first open.
    const writer = await holdStore(home, 0);
    await writer.done;
  });
  afterAll(() => scratch.cleanup());

  test("a holder that never lets go is named after the stall limit, and nothing runs", async () => {
    const writer = await holdStore(home, 60_000);
    let ran = false;
    let failure: unknown;
    try {
      withWriterLock(storePath(home), () => (ran = true), 300);
    } catch (error) {
      failure = error;
    } finally {
      process.kill(writer.pid, "SIGKILL");
      await writer.done;
    }
    expect(failure).toBeInstanceOf(WriterLockStalled);
    expect((failure as Error).message).toContain(writerLockPath(storePath(home)));
    expect((failure as Error).message).toContain(`process ${writer.pid} has held it since`);
    expect(ran).toBe(false);
    // The kernel released the dead holder's lock: the next writer gets it at once.
    expect(withWriterLock(storePath(home), () => "mine", 300)).toBe("mine");
  }, 30_000);

  test("a queue longer than the stall limit keeps moving: the limit is on progress, not on the wait", async () => {
    const first = await holdStore(home, 1_000);
    // Each holds it 400 ms and gives up after 3 s without progress: the queue takes 5 s.
    const writers = Array.from({ length: 10 }, () => spawnWriter(["lock", home, "400", "3000"]));
    expect(await Promise.all(writers)).toEqual(Array(10).fill(0));
    expect(await first.done).toBe(0);
  }, 60_000);
});

/** A writer that waits its turn, holds the lock and exits: resolves to its exit code. */
function spawnWriter(args: string[]): Promise<number | null> {
  const child = spawnChild(process.execPath, [WRITER, ...args], { stdio: ["ignore", "ignore", "inherit"] });
  return new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
}
