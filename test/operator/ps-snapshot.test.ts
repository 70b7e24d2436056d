/**
 * ps reads the store before it lists the processes. The other order showed a launch that
 * committed in between as running with no processes and no memory (a flaky ls-ps test). The
 * window is forced here without timing: the process snapshot's own callback launches one.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Database } from "bun:sqlite";
import { liveExecutions } from "../../src/operator/ps.ts";
import { bootId, listProcesses, readProcess } from "../../src/platform/process.ts";
import { openDatabase } from "../../src/store/db.ts";
import { testCgroupRoot, type TestCgroupRoot } from "../../kit/cgroup.ts";
import { tempDir, type Scratch } from "../../kit/scratch.ts";
import { insertExecution, storePath } from "../support/store.ts";
import { withoutCgroups } from "../support/platform.ts";

let dir: Scratch;
let cgroups: TestCgroupRoot | null;
let db: Database;
const started: ChildProcess[] = [];
let launches = 0;

beforeAll(() => {
  dir = tempDir("phr-ps-snapshot-");
  cgroups = testCgroupRoot();
  db = openDatabase(storePath(dir.path));
});

afterAll(() => {
  db.close();
  for (const child of started) child.kill("SIGKILL");
  cgroups?.cleanup();
  dir.cleanup();
});

/** What a wrapper does under cgroup containment: the workload runs in its cgroup, then its pid is recorded. */
function launch(workspaceId: string): void {
  const cgroup = join(cgroups!.path, `exec-${++launches}`);
  mkdirSync(cgroup);
  const child = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
  started.push(child);
  writeFileSync(join(cgroup, "cgroup.procs"), String(child.pid));
  const info = readProcess(child.pid!)!;
  insertExecution(db, {
    workspaceId,
    execId: `exec-${launches}`,
    mode: "pipes",
    purpose: "workload",
    argv0: "sleep",
    pid: info.pid,
    pgid: info.pgid,
    startTicks: info.startTicks,
    bootId: bootId(),
    wrapperPid: process.pid,
    wrapperStartTicks: readProcess(process.pid)!.startTicks,
    cgroup,
  });
}

describe.skipIf(withoutCgroups("operator/ps-snapshot.test.ts, ps's view of a launch"))("ps's view of a launch", () => {
  test("a launch committed after ps read the store is not shown, never as running with no processes", () => {
    const seen = liveExecutions(db, "late", () => {
      const before = listProcesses();
      launch("late");
      return before;
    });
    expect(seen).toEqual([]);
  });

  test("a launch committed before ps looked is shown with its process", () => {
    launch("early");
    const [seen, ...rest] = liveExecutions(db, "early");
    expect(rest).toEqual([]);
    expect(seen).toMatchObject({ workspaceId: "early", state: "running", processes: 1 });
  });
});
