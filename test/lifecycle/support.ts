/**
 * Lifecycle test kit: throwaway git repositories, a private runtime home per test, and the
 * compiled binary driven the way the daemon drives it (one request line on stdin, one
 * response on stdout).
 */
import { existsSync, mkdirSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { openDatabase } from "../../src/store/db.ts";
import { getWorkspace, listWorkspaces, type WorkspaceRecord } from "../../src/store/workspaces.ts";
import { unfinishedExecutions } from "../../src/store/executions.ts";
import { LifecycleResponse, encodeFrame, parseMessage, type Dialect } from "../../src/protocol/index.ts";
import { BIN, runBinary, tempDir, type RunResult } from "../support/binary.ts";
import { testCgroupRoot } from "../support/cgroup.ts";
import { INSTANCE_ID } from "../support/daemon.ts";
import { cmdlineOf } from "../support/procs.ts";

export { BIN };

/** Git identity and isolation for the repositories the tests build (not for the runtime). */
const GIT_TEST_ENV = {
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.invalid",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};

/** Runs git for test setup; throws with its stderr on failure. */
export function git(cwd: string, ...args: string[]): string {
  const result = Bun.spawnSync({ cmd: ["git", ...args], cwd, env: { ...process.env, ...GIT_TEST_ENV }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${result.stderr.toString()}`);
  return result.stdout.toString().trim();
}

/** Writes files (creating directories) under `dir`. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

/**
 * A repository on `main` with README, app/index.txt and a second branch `feature` (one commit
 * ahead, adding feature.txt), plus a tag v1 on the first commit.
 */
export function makeRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "-q", "-b", "main");
  writeFiles(dir, { "README.md": "hello\n", "app/index.txt": "app\n", "app/nested/deep.txt": "deep\n" });
  git(dir, "add", ".");
  git(dir, "commit", "-q", "-m", "first");
  git(dir, "tag", "v1");
  git(dir, "checkout", "-q", "-b", "feature");
  writeFiles(dir, { "feature.txt": "feature\n" });
  git(dir, "add", ".");
  git(dir, "commit", "-q", "-m", "feature work");
  git(dir, "checkout", "-q", "main");
  return realpathSync(dir);
}

/** A bare copy of `repo` at `dir`, served as a file:// URL (with a GitHub-style pull ref). */
export function makeRemote(repo: string, dir: string): string {
  git(dirname(dir), "clone", "-q", "--bare", repo, dir);
  git(dir, "update-ref", "refs/pull/7/head", git(repo, "rev-parse", "feature"));
  return `file://${dir}`;
}

/** A test's private world: a temp dir with a runtime home in it, removed by cleanup. */
export interface Lab {
  dir: string;
  home: string;
  options: Record<string, unknown>;
  cleanup(): void;
}

export function lab(prefix = "phr-life-"): Lab {
  const dir = tempDir(prefix);
  const path = realpathSync(dir.path);
  const home = join(path, "home");
  const cgroups = testCgroupRoot();
  const cleanup = () => {
    cgroups?.cleanup();
    dir.cleanup();
  };
  return { dir: path, home, options: { stateDirectory: home, ...(cgroups ? { cgroupRoot: cgroups.path } : {}) }, cleanup };
}

/** A lab with a fresh repository in it: where most lifecycle tests start. */
export function repoLab(prefix?: string): { t: Lab; repo: string } {
  const t = lab(prefix);
  return { t, repo: makeRepo(join(t.dir, "repo")) };
}

/** A lifecycle result with the parsed stdout (null when stdout was empty). */
export interface OpResult extends RunResult {
  json: any;
}

/** Runs one lifecycle operation of the binary as the daemon does. */
export async function op(
  name: "create" | "inspect" | "pause" | "resume" | "destroy" | "reconcile",
  workspaceId: string | null,
  body: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<OpResult> {
  const args = workspaceId === null ? [name] : [name, "--workspace-id", workspaceId];
  const result = await runBinary(args, { stdin: `${JSON.stringify({ protocolVersion: 1, ...body })}\n`, env });
  return { ...result, json: result.stdout === "" ? null : JSON.parse(result.stdout) };
}

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

