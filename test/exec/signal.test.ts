import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../src/store/db.ts";
import { getExecution } from "../../src/store/executions.ts";
import { executionOf } from "../support/records.ts";
import { insertExecution, storePath } from "../support/store.ts";
import { listProcesses, readProcess } from "../../src/platform/process.ts";
import { request, runBinary } from "../../kit/binary.ts";
import { PATH, envelope, newExecId } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { signalOp } from "../support/operation.ts";
import { linuxOnly } from "../support/platform.ts";
import { until } from "../support/poll.ts";
import { processesWith } from "../support/procs.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc). */
const PROC = linuxOnly("exec/signal.test.ts, sessions and workloads found through /proc", "/proc");

let ws: ReadyWorkspace;

beforeAll(async () => {
  ws = await readyWorkspace("signal");
});
afterAll(() => ws.cleanup());

/** Every entry below `dir` with a file's text (null for a directory), sorted: what "unchanged" compares. */
function contentsOf(dir: string): [string, string | null][] {
  const names = (readdirSync(dir, { recursive: true }) as string[]).sort();
  return names.map((name) => {
    const path = join(dir, name);
    return [name, statSync(path).isDirectory() ? null : readFileSync(path, "utf8")];
  });
}

/** Live (non-zombie) processes in session `sid`. */
function sessionMembers(sid: number): number[] {
  return listProcesses()
    .filter((info) => info.sid === sid && info.state !== "Z")
    .map((info) => info.pid);
}

/** The workload pid: the child of the wrapper that leads its own session. */
async function workloadOf(wrapperPid: number): Promise<number> {
  const workload = await until("the workload", () => listProcesses().find((info) => info.ppid === wrapperPid && info.sid === info.pid));
  return workload.pid;
}

describe("signal: the bounded cleanup path", () => {
  test.skipIf(PROC)("after the wrapper was SIGKILLed right after started, signal SIGKILL reaps the detached workload; a second call exits 0", async () => {
    const env = envelope(["sh", "-c", "sleep 30 & sleep 30 & wait"], { options: ws.options, env: { PATH } });
    const handle = startExec(ws.id, env);
    await handle.waitEvent("started");
    const workload = await workloadOf(handle.pid);
    await until("the shell and its two sleeps", () => sessionMembers(workload).length >= 3);
    expect(sessionMembers(workload).length).toBe(3);
    process.kill(handle.pid, "SIGKILL");
    await handle.exited;
    expect(sessionMembers(workload).length).toBe(3);
    const first = await signalOp(ws, env.execId as string);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(sessionMembers(workload)).toEqual([]);
    await handle.done;
    const second = await signalOp(ws, env.execId as string);
    expect(second.code).toBe(0);
  });

  test("before any record exists, signal fails with 'not ready'", async () => {
    const result = await signalOp(ws, newExecId());
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("is not ready");
  });

  test("after completion, signal exits 0 at once: it signals nothing, not even a live process the record names", async () => {
    const env = envelope(["true"], { options: ws.options, env: { PATH } });
    const execId = env.execId as string;
    const handle = startExec(ws.id, env);
    handle.closeStdin();
    expect((await handle.done).code).toBe(0);
    const bystander = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
    try {
      const info = readProcess(bystander.pid!)!;
      const db = openDatabase(storePath(ws.home));
      const finished = getExecution(db, ws.id, execId)!;
      expect(finished.finishedAt).not.toBeNull();
      // As if the workload's pid now belonged to a live process whose identity matches the
      // record exactly, outside any cgroup: only "finished" stands between signal and it.
      db.run("UPDATE executions SET pid = ?1, pgid = ?2, start_ticks = ?3, cgroup = NULL WHERE workspace_id = ?4 AND exec_id = ?5", [info.pid, info.pgid, info.startTicks, ws.id, execId]);
      db.close();
      const result = await signalOp(ws, execId);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe("");
      await Bun.sleep(50);
      expect(readProcess(bystander.pid!)).toMatchObject({ startTicks: info.startTicks, state: "S" });
      const after = openDatabase(storePath(ws.home));
      expect(getExecution(after, ws.id, execId)).toMatchObject({ finishedAt: finished.finishedAt, exitCode: finished.exitCode, exitSignal: finished.exitSignal });
      after.close();
    } finally {
      bystander.kill("SIGKILL");
    }
  });

  for (const name of ["SIGNOPE", "9", "SIGRTMIN", "SIGRTMIN+1", "sigkill", "KILL"]) {
    test(`--signal ${name} is a usage error (exit 2) and nothing is read`, async () => {
      // A request that is not JSON: had stdin been read, the failure would be exit 1 about it.
      const result = await runBinary(["signal", "--workspace-id", ws.id, "--exec-id", newExecId(), "--signal", name], { stdin: "not a request\n" });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(`--signal ${JSON.stringify(name)} is not a signal name (give one such as SIGTERM or SIGKILL, not a number)`);
      expect(result.stderr).toContain("Usage: paseo-host-runtime signal");
    });
  }

  test.skipIf(PROC)("a record whose start time does not match (pid reuse) never signals the live process", async () => {
    const bystander = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
    try {
      const info = readProcess(bystander.pid!)!;
      const db = openDatabase(storePath(ws.home));
      const execId = newExecId();
      insertExecution(db, executionOf(ws.id, execId, info.pid, { purpose: "git", startTicks: info.startTicks - 1, wrapperPid: 999999, wrapperStartTicks: 1 }));
      db.close();
      const result = await signalOp(ws, execId);
      expect(result.code).toBe(0);
      await Bun.sleep(50);
      expect(readProcess(bystander.pid!)?.state).not.toBe("Z");
      expect(readFileSync(`/proc/${bystander.pid}/cmdline`, "latin1")).toContain("sleep");
    } finally {
      bystander.kill("SIGKILL");
    }
  });

  test("ownership: another owner's options cannot signal this workspace", async () => {
    const result = await runBinary(["signal", "--workspace-id", ws.id, "--exec-id", newExecId(), "--signal", "SIGKILL"], {
      stdin: request({ ...ws.options, owner: "someone-else" }),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("ownership mismatch");
  });
});

describe("pause and destroy stop live executions", () => {
  test("pause ends a running workload, refuses later execs, and resume allows them again", async () => {
    const own = await readyWorkspace("pause");
    try {
      const handle = startExec(own.id, envelope(["sleep", "30"], { options: own.options, env: { PATH } }));
      await handle.waitEvent("started");
      const paused = await runBinary(["pause", "--workspace-id", own.id], { stdin: request(own.options) });
      expect(paused.stderr).toBe("");
      expect(paused.code).toBe(0);
      const ended = await handle.done;
      expect(ended.violation).toBeNull();
      expect(ended.events.at(-1)).toMatchObject({ type: "exit", signal: "SIGTERM" });
      const refused = await startExec(own.id, envelope(["true"], { options: own.options, env: { PATH } })).done;
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("is paused");
      expect(refused.events).toEqual([]);
      expect((await runBinary(["resume", "--workspace-id", own.id], { stdin: request(own.options) })).code).toBe(0);
      const again = startExec(own.id, envelope(["true"], { options: own.options, env: { PATH } }));
      again.closeStdin();
      expect((await again.done).code).toBe(0);
    } finally {
      own.cleanup();
    }
  });

  test("destroy kills a running workload and the adopted directory stays", async () => {
    const own = await readyWorkspace("destroy");
    try {
      writeFileSync(join(own.root, "kept.txt"), "the operator's file\n");
      mkdirSync(join(own.root, "src"));
      writeFileSync(join(own.root, "src", "main.c"), "int main(void) { return 0; }\n");
      const before = contentsOf(own.root);
      const handle = startExec(own.id, envelope(["sh", "-c", "trap '' TERM; sleep 30 & wait"], { options: own.options, env: { PATH } }));
      await handle.waitEvent("started");
      const destroyed = await runBinary(["destroy", "--workspace-id", own.id], { stdin: request(own.options) });
      expect(destroyed.code).toBe(0);
      const ended = await handle.done;
      expect(ended.events.at(-1)).toMatchObject({ type: "exit", signal: "SIGKILL" });
      expect(contentsOf(own.root)).toEqual(before);
      const inspected = await runBinary(["inspect", "--workspace-id", own.id], { stdin: request(own.options) });
      expect(JSON.parse(inspected.stdout)).toEqual({ type: "inspection", protocolVersion: 1, inspection: { status: "missing" } });
    } finally {
      own.cleanup();
    }
  });
});

describe("pause racing launches", () => {
  const rounds = process.env.PASEO_STRESS === "1" ? 25 : 3;
  test.skipIf(PROC)(`execs starting while pause runs either never start or are stopped: nothing survives the pause (${rounds} rounds)`, async () => {
    for (let round = 0; round < rounds; round++) await pauseRace(round);
  });

  async function pauseRace(round: number): Promise<void> {
    const own = await readyWorkspace("race");
    try {
      const tag = `${30 + Math.floor(Math.random() * 1000) / 1000}`;
      const handles = Array.from({ length: 8 }, () => startExec(own.id, envelope(["sleep", tag], { options: own.options, env: { PATH } })));
      await Bun.sleep(5 + (round % 5) * 5);
      const paused = await runBinary(["pause", "--workspace-id", own.id], { stdin: request(own.options) });
      expect(paused.code).toBe(0);
      const results = await Promise.all(handles.map((handle) => handle.done));
      for (const result of results) {
        // Refused (already paused), or cancelled before it spawned anything.
        if (result.events.length === 0) expect(result.stderr).toMatch(/is paused|was paused or destroyed while the workload launched; nothing was launched/);
        else if (result.events[0]!.type === "error") expect(result.events.map((e) => e.type)).toEqual(["error"]);
        else expect(result.events.at(-1)).toMatchObject({ type: "exit", code: null });
      }
      expect(processesWith(`sleep\0${tag}\0`)).toEqual([]);
    } finally {
      own.cleanup();
    }
  }
});
