/**
 * Records a test builds by hand: a workspace record as the store returns it (for code that takes
 * one), and a launched execution's record to plant with `insertExecution` (test/support/store.ts).
 */
import { bootId, readProcess } from "../../src/platform/process.ts";
import type { ExecutionRecord } from "../../src/store/executions.ts";
import type { WorkspaceRecord } from "../../src/store/workspaces.ts";

/** A ready, adopted workspace "ws-1" of owner "me" (seed dialect, configuration "c"), `fields` over it. */
export function recordOf(fields: Partial<WorkspaceRecord> = {}): WorkspaceRecord {
  return {
    workspaceId: "ws-1",
    owner: "me",
    dialect: "seed",
    instanceId: null,
    configuration: "c",
    status: "ready",
    input: {},
    inputDigest: "",
    hostDirectory: "adopt",
    kind: "adopted",
    root: "/nonexistent",
    details: {},
    lock: null,
    lockOp: null,
    child: null,
    confinement: null,
    createdAt: 0,
    updatedAt: 0,
    cgroup: null,
    destroyProblem: null,
    listedAt: 0,
    orphanedAt: null,
    isolation: null,
    ...fields,
  };
}

/** What `insertExecution` plants: an execution record without what its end writes. */
export type LaunchedExecution = Omit<ExecutionRecord, "startedAt" | "finishedAt" | "exitCode" | "exitSignal" | "cgroup"> & { cgroup?: string | null };

/**
 * The record of an execution launched as process `pid` (its group and start time read now unless
 * `fields` gives them, this boot), of purpose terminal in pipes mode, its wrapper this test
 * process; `fields` over it (a dead wrapper, another start time for a pid-reuse scenario).
 */
export function executionOf(workspaceId: string, execId: string, pid: number, fields: Partial<LaunchedExecution> = {}): LaunchedExecution {
  const started = fields.startTicks !== undefined && fields.pgid !== undefined ? { pgid: fields.pgid, startTicks: fields.startTicks } : readProcess(pid);
  if (!started) throw new Error(`executionOf: process ${pid} is not running (give its pgid and startTicks)`);
  return {
    workspaceId,
    execId,
    mode: "pipes",
    purpose: "terminal",
    argv0: "sleep",
    pid,
    pgid: started.pgid,
    startTicks: started.startTicks,
    bootId: bootId(),
    wrapperPid: process.pid,
    wrapperStartTicks: readProcess(process.pid)!.startTicks,
    ...fields,
  };
}
