/**
 * Lifecycle test kit: throwaway git repositories, a private runtime home per test, and the
 * compiled binary driven the way the daemon drives it (one request line on stdin, one
 * response on stdout).
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../src/store/db.ts";
import { getWorkspace, listWorkspaces, type WorkspaceRecord } from "../../src/store/workspaces.ts";
import { unfinishedExecutions } from "../../src/store/executions.ts";
import { LifecycleResponse, encodeFrame, parseMessage, type Dialect } from "../../src/protocol/index.ts";
import { BIN } from "../../kit/binary.ts";
import { INSTANCE_ID } from "../../kit/envelope.ts";
import { cmdlineOf } from "../support/procs.ts";
import { op, type OpResult } from "../support/operation.ts";
import { git, makeRemote, makeRepo, writeFiles } from "../support/git.ts";

export { op, type OpResult };
export { git, makeRemote, makeRepo, writeFiles };

export { BIN };

/**
 * A lifecycle body as the later daemon sends it (runtimeInstanceId second once `op` adds the
 * version). Pass the result to `op`.
 */
export function later(body: Record<string, unknown>, instanceId = INSTANCE_ID): Record<string, unknown> {
  return { runtimeInstanceId: instanceId, ...body };
}

/**
 * Judges a successful operation's stdout as the daemon of `dialect` does (the version, then the
 * strict schema) and checks it is canonical bytes; returns the response.
 */
export function response(result: OpResult, dialect: Dialect): any {
  const parsed = parseMessage(LifecycleResponse[dialect], ok(result) === null ? "" : result.stdout.trimEnd(), "lifecycle response");
  if (encodeFrame(LifecycleResponse[dialect], parsed, "lifecycle response") !== result.stdout) throw new Error(`not canonical: ${result.stdout}`);
  return parsed;
}

/** A create input for `source` and `placement`. */
export function createInput(workspaceId: string, source: Record<string, unknown>, placement: Record<string, unknown> = { kind: "existing" }, extra: Record<string, unknown> = {}) {
  return { workspaceId, project: { projectId: "project-1", source }, placement, ...extra };
}

/** `create` with `input` under `options`; the request body is exactly what the daemon sends. */
export async function create(options: Record<string, unknown>, input: { workspaceId: string }): Promise<OpResult> {
  return await op("create", input.workspaceId, { input, options });
}

/** Asserts an operation succeeded and returns its JSON. */
export function ok(result: OpResult): any {
  if (result.code !== 0) throw new Error(`expected exit 0, got ${result.code}: ${result.stderr}`);
  return result.json;
}

/** Everything under `<home>/workspaces` (relative paths, top two levels). */
export function ownedEntries(home: string): string[] {
  const dir = join(home, "workspaces");
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((key) => {
    const sub = join(dir, key);
    const inner = readdirSync(sub);
    return inner.length === 0 ? [key] : inner.map((name) => `${key}/${name}`);
  });
}

/** The store of a lab's home, read directly (tests only look, or plant fixtures). */
export function withStore<T>(home: string, fn: (db: ReturnType<typeof openDatabase>) => T): T {
  const db = openDatabase(join(home, "state.sqlite"));
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** The record of one workspace (any status), or null. */
export function record(home: string, workspaceId: string): WorkspaceRecord | null {
  return withStore(home, (db) => getWorkspace(db, workspaceId));
}

/** Every workspace row of the home. */
export function records(home: string): WorkspaceRecord[] {
  if (!existsSync(join(home, "state.sqlite"))) return [];
  return withStore(home, (db) => listWorkspaces(db));
}

/** Unfinished execution rows of a workspace. */
export function liveExecutionRows(home: string, workspaceId: string) {
  return withStore(home, (db) => unfinishedExecutions(db, workspaceId));
}

/** Worktree paths registered in `repo` (the main one first). */
export function worktrees(repo: string): string[] {
  return git(repo, "worktree", "list", "--porcelain")
    .split("\n")
    .filter((line) => line.startsWith("worktree "))
    .map((line) => line.slice("worktree ".length));
}

/** Local branches of `repo`. */
export function branches(repo: string): string[] {
  return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads").split("\n").filter(Boolean).sort();
}

/**
 * Waits until the workspace row records a git child and that child really is git clone (it is
 * recorded while still the `sh` gate, which exits instead of running git if its creator dies).
 */
export async function recordedChild(home: string, id: string): Promise<{ pid: number; startTicks: number }> {
  for (let i = 0; i < 1000; i++) {
    const child = existsSync(join(home, "state.sqlite")) ? record(home, id)?.child : null;
    // Until the gate opens the child is `/bin/sh -c … git clone …`; after it, argv[0] is git.
    const argv = child ? cmdlineOf(child.pid).split("\0") : [];
    if (child && argv[0]?.endsWith("git") && argv.includes("clone")) return child;
    await Bun.sleep(10);
  }
  throw new Error("the create never recorded a running git clone");
}

