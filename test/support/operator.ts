/**
 * The operator commands as a person runs them: a lab with its own user home and environment,
 * commands run in the background, the teardown that fails when a workspace is left behind, and
 * what `ls` lists.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { BIN, runBinary, type RunOptions, type RunResult } from "../../kit/binary.ts";
import { removeCgroupTree } from "../../kit/cgroup.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { ownCgroupDir } from "../../src/platform/cgroup.ts";
import { homeCgroupOf } from "../../src/containment/resolve.ts";

/** A lab whose `home` is the runtime home an operator command is given (`--home`). */
export interface Sandbox extends Lab {
  /** HOME / XDG_STATE_HOME / PASEO_HOME pointed inside the sandbox, so no fallback reaches the real ones. */
  env: Record<string, string>;
  /** `--options-json` naming the private cgroup root, for commands that run executions ([] without cgroup v2). */
  cgroupArgs: string[];
}

export function sandbox(): Sandbox {
  const world = lab("phr-op-");
  const { dir } = world;
  mkdirSync(join(dir, "user-home"));
  return {
    ...world,
    // A UTF-8 locale (doctor's ✓ marks) and no NO_COLOR/PASEO_HOME from the caller's environment.
    env: {
      HOME: join(dir, "user-home"),
      XDG_STATE_HOME: join(dir, "user-home", "state"),
      PASEO_HOST_RUNTIME_HOME: join(dir, "unused-home"),
      PASEO_HOME: join(dir, "user-home", ".paseo"),
      LC_ALL: "C.UTF-8",
      NO_COLOR: "",
    },
    cgroupArgs: world.cgroupRoot ? ["--options-json", JSON.stringify({ cgroupRoot: world.cgroupRoot })] : [],
    cleanup: () => {
      // A command run without cgroupArgs found the real hierarchy: remove what it made there for this home.
      const own = ownCgroupDir();
      if (own) removeCgroupTree(homeCgroupOf(own, world.home));
      world.cleanup();
    },
  };
}

/** Runs an operator command with the sandbox's environment. */
export function runIn(box: Sandbox, args: string[], options: RunOptions = {}): Promise<RunResult> {
  return runBinary(args, { ...options, env: { ...box.env, ...options.env } });
}

/** How a background command ended. */
export interface Ended {
  code: number | null;
  signal: string | null;
  stdout: Buffer;
  stderr: string;
}

/** An operator command running in the background (stdio piped, stdout collected as it comes). */
export interface Background {
  proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
  /** What it wrote on stdout so far. */
  stdoutText(): string;
  /** Resolves once it exited and its output is read. */
  done: Promise<Ended>;
}

/** The background commands of each sandbox, for `teardown`. */
const running = new WeakMap<Sandbox, Bun.Subprocess[]>();

/**
 * Starts an operator command (`run -w W … -- ARGV`, `logs --follow` …) in the background with
 * the sandbox's environment; `stdin` is written then closed, unless `keepStdin`. `teardown`
 * kills it if it is still running.
 */
export function background(box: Sandbox, args: string[], stdin?: string | Uint8Array, keepStdin = false): Background {
  const proc = Bun.spawn([BIN, ...args], { env: { ...process.env, ...box.env }, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  running.set(box, [...(running.get(box) ?? []), proc]);
  if (stdin !== undefined) proc.stdin.write(stdin);
  if (!keepStdin) proc.stdin.end();
  const stdout: Buffer[] = [];
  const reading = (async () => {
    for await (const chunk of proc.stdout) stdout.push(Buffer.from(chunk));
  })();
  const done = Promise.all([reading, new Response(proc.stderr).text(), proc.exited]).then(([, stderr]) => ({
    code: proc.exitCode,
    signal: proc.signalCode === null ? null : String(proc.signalCode),
    stdout: Buffer.concat(stdout),
    stderr,
  }));
  return { proc, done, stdoutText: () => Buffer.concat(stdout).toString() };
}

/**
 * Removes a workspace of the sandbox's home with `rm --force` (its live executions stopped first;
 * an id already gone is fine); throws, with rm's stderr, when it is left behind. `args` adds
 * flags such as `--owner NAME`.
 */
export async function removed(box: Sandbox, workspaceId: string, ...args: string[]): Promise<void> {
  const result = await runIn(box, ["rm", "-w", workspaceId, "--force", "--home", box.home, ...args]);
  if (result.code !== 0) throw new Error(`teardown: rm of workspace "${workspaceId}" did not succeed (exit ${result.code}): ${result.stderr}`);
}

/**
 * A sandbox's teardown: SIGKILLs its background commands still running, removes `workspaces`
 * (an id, or an id and rm's extra flags) as `removed` does, then the sandbox, which is removed
 * even when a workspace was left behind; that failure is thrown after.
 */
export async function teardown(box: Sandbox, workspaces: readonly (string | readonly [string, ...string[]])[] = []): Promise<void> {
  const procs = running.get(box) ?? [];
  for (const proc of procs) if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  await Promise.all(procs.map((proc) => proc.exited));
  try {
    for (const entry of workspaces) {
      const [id, ...args] = typeof entry === "string" ? [entry] : entry;
      await removed(box, id!, ...args);
    }
  } finally {
    box.cleanup();
  }
}

/** What `ls --json` lists of a workspace (the fields tests look at; the rest as it comes). */
export interface Listed {
  workspaceId: string;
  owner: string;
  status: string;
  /** The workspace root (a ready workspace has one). */
  root: string;
  [field: string]: unknown;
}

/**
 * The workspaces `ls --json` lists in `where.home` (with `where.env` when given: a sandbox's),
 * `args` added (`--owner NAME`); throws, with ls's stderr, when ls failed.
 */
export async function listed(where: { home: string; env?: Record<string, string> }, ...args: string[]): Promise<Listed[]> {
  const result = await runBinary(["ls", "--home", where.home, "--json", ...args], { env: where.env });
  if (result.code !== 0) throw new Error(`ls --home ${where.home} failed (exit ${result.code}): ${result.stderr}`);
  return (JSON.parse(result.stdout) as { workspaces: Listed[] }).workspaces;
}

/** The ids `ls --json` lists in `where.home`, in its order (`args` as for `listed`). */
export async function lsIds(where: { home: string; env?: Record<string, string> }, ...args: string[]): Promise<string[]> {
  return (await listed(where, ...args)).map((workspace) => workspace.workspaceId);
}
