/**
 * Running git for materialization. Git gets the runtime's environment minus everything that
 * would point it at another repository, never our stdout (that is protocol only), and a failed
 * git's stderr is quoted in the error.
 */
import { isTerminal } from "../platform/tty.ts";
import { writeAll } from "../output.ts";
import { redactCredentials } from "../redact.ts";
import { readProcess } from "../platform/process.ts";

/**
 * Variables that redirect git to another repository, index or object store (the list of
 * `git rev-parse --local-env-vars` in git 2.39, plus discovery limits). Inherited from a daemon
 * that itself runs inside a git hook, they would make us act on the wrong repository.
 */
const REDIRECTING = [
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_CONFIG",
  "GIT_CONFIG_PARAMETERS",
  "GIT_CONFIG_COUNT",
  "GIT_OBJECT_DIRECTORY",
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_IMPLICIT_WORK_TREE",
  "GIT_GRAFT_FILE",
  "GIT_INDEX_FILE",
  "GIT_NO_REPLACE_OBJECTS",
  "GIT_REPLACE_REF_BASE",
  "GIT_PREFIX",
  "GIT_INTERNAL_SUPER_PREFIX",
  "GIT_SHALLOW_FILE",
  "GIT_COMMON_DIR",
  "GIT_CEILING_DIRECTORIES",
  "GIT_DISCOVERY_ACROSS_FILESYSTEM",
  "GIT_NAMESPACE",
];

/** The environment git runs with. Never prompts: nobody is there to answer. */
export function gitEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || REDIRECTING.includes(key) || key.startsWith("GIT_CONFIG_KEY_") || key.startsWith("GIT_CONFIG_VALUE_")) continue;
    out[key] = value;
  }
  out.GIT_TERMINAL_PROMPT = "0";
  return out;
}

let cachedGit: string | undefined;

/** Absolute path of git on the runtime's PATH. */
export function gitPath(): string {
  if (cachedGit) return cachedGit;
  const found = Bun.which("git", { PATH: process.env.PATH ?? "" });
  if (!found) throw new Error(`git was not found on PATH (${process.env.PATH ?? "unset"}); install git 2.17 or newer (paseo-host-runtime doctor checks it)`);
  cachedGit = found;
  return found;
}

/** A git command that failed: the message quotes git's stderr. */
export class GitError extends Error {
  override name = "GitError";
  constructor(
    args: readonly string[],
    cwd: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    const quoted = stderr.trim() === "" ? "(no output)" : stderr.trim().split("\n").slice(-12).join("\n  ");
    super(`git ${args.join(" ")} failed in ${cwd} (exit ${exitCode ?? "by signal"}):\n  ${quoted}`);
  }
}

/** Runs a short read-only git command and returns its stdout, trimmed. Throws GitError. */
export function gitRead(cwd: string, args: readonly string[]): string {
  const result = Bun.spawnSync({ cmd: [gitPath(), ...args], cwd, env: gitEnvironment(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new GitError(args, cwd, result.exitCode, result.stderr.toString());
  return result.stdout.toString().trim();
}

/** Like gitRead, but a command that answers "no" by exiting 1 (rev-parse --verify -q, symbolic-ref -q) gives null. */
export function gitQuery(cwd: string, args: readonly string[]): string | null {
  const result = Bun.spawnSync({ cmd: [gitPath(), ...args], cwd, env: gitEnvironment(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (result.exitCode === 1) return null;
  if (result.exitCode !== 0) throw new GitError(args, cwd, result.exitCode, result.stderr.toString());
  return result.stdout.toString().trim();
}

/** The git process a lock holder is waiting for, so a takeover can kill it. */
export interface ChildTracker {
  started(child: { pid: number; startTicks: number }): void;
  finished(): void;
}

/**
 * Runs a git command that changes the disk (clone, worktree add, fetch, checkout). Its stdout
 * goes to our stderr; its stderr is shown live on a terminal (with progress), otherwise
 * captured and quoted on failure.
 *
 * With a tracker, git runs in its own session behind a one-line gate: `sh` waits for "go" on
 * stdin and only then becomes git. The child's identity is recorded before the gate opens, so
 * if we are killed at any instant either git never started or its identity is on record and
 * whoever takes over the workspace kills it before cleaning up.
 */
export async function gitRun(cwd: string, args: readonly string[], tracker?: ChildTracker): Promise<void> {
  const live = isTerminal(2);
  const argv = [gitPath(), ...args];
  const cmd = tracker ? ["/bin/sh", "-c", 'read -r go && exec "$@"', "paseo-git-gate", ...argv] : argv;
  const proc = Bun.spawn({
    cmd,
    cwd,
    env: gitEnvironment(),
    stdin: tracker ? "pipe" : "ignore",
    stdout: 2,
    stderr: live ? "inherit" : "pipe",
    detached: tracker !== undefined,
  });
  if (tracker) openGate(proc, tracker);
  const stderr = live ? "" : await new Response(proc.stderr as ReadableStream).text();
  const code = await proc.exited;
  tracker?.finished();
  if (code !== 0) throw new GitError(args, cwd, proc.exitCode, live ? "(see git's output above)" : stderr);
  // Warnings of a successful git stay visible to whoever reads our stderr.
  if (!live && stderr.trim() !== "") forward(stderr);
}

function openGate(proc: Bun.Subprocess<"pipe", number, "pipe" | "inherit">, tracker: ChildTracker): void {
  // The gate opens only once the identity is on record; otherwise EOF makes `read` fail and
  // git never runs (also when recording throws).
  try {
    const info = readProcess(proc.pid);
    if (!info) return;
    tracker.started({ pid: proc.pid, startTicks: info.startTicks });
    proc.stdin.write("go\n");
  } finally {
    void proc.stdin.end();
  }
}

function forward(text: string): void {
  const safe = redactCredentials(text);
  writeAll(2, safe.endsWith("\n") ? safe : `${safe}\n`);
}
