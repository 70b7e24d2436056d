/**
 * Running git for materialization. Git gets the environment of git-environment.ts, never our
 * stdout (that is protocol only), a bound on its run time, and a watchdog that ends it when
 * we die; a failed git's stderr is quoted in the error.
 */
import { isTerminal } from "../platform/tty.ts";
import { writeAll } from "../output.ts";
import { PEER_GONE, tolerating } from "../platform/errno.ts";
import { redactCredentials } from "../redact.ts";
import { printableLines } from "../printable.ts";
import { bootId, readProcess } from "../platform/process.ts";
import { stopWorkload } from "../containment/group-scope.ts";
import { GroupHandle } from "../platform/pidfd.ts";
import { gitEnvironment, gitPath, LOCAL_GIT, type GitSettings } from "./git-environment.ts";

/** A git command that failed: the message quotes git's stderr. */
export class GitError extends Error {
  override name = "GitError";
  constructor(
    args: readonly string[],
    cwd: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    // One line (a diagnostic is one line: src/output.ts): git's last lines, joined.
    const said = withOurOwnershipAdvice(stderr.trim());
    const quoted = said === "" ? "(no output)" : said.split("\n").slice(-12).map((line) => line.trim()).filter((line) => line !== "").join(" | ");
    super(`git ${args.join(" ")} failed in ${cwd} (exit ${exitCode ?? "by signal"}): ${quoted}`);
  }
}

/** What git says after "dubious ownership": its advice, which docs/operators.md warns against as a default. */
const SAFE_DIRECTORY_ADVICE = /\n[^\n]*To add an exception for this directory[\s\S]*$/;

/**
 * git's refusal of a repository owned by another user, with the project's advice instead of
 * git's `git config --global --add safe.directory …`: trusting another user's repository lets
 * its `.git/config` run programs as this user (docs/operators.md, "A daemon that does not run as root").
 */
function withOurOwnershipAdvice(stderr: string): string {
  if (!stderr.includes("detected dubious ownership")) return stderr;
  const uid = process.getuid?.();
  return (
    stderr.replace(SAFE_DIRECTORY_ADVICE, "") +
    `\nthe repository belongs to another user than the one running the runtime${uid === undefined ? "" : ` (uid ${uid})`}: run the daemon as the repository's owner, or give it a repository of its own ` +
    `(docs/operators.md "A daemon that does not run as root"; safe.directory only for an owner you trust as much as this user)`
  );
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

/** What gitCapture saw of one git command. */
export interface GitCaptured {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a git command that may take a while (a fetch) with `settings` (its transports, its time
 * bound: past it git is SIGKILLed, and GitError says so) and `input` on its stdin; returns what
 * it printed. Throws GitError when it fails.
 */
export function gitCapture(cwd: string, args: readonly string[], settings: GitSettings, input?: string): GitCaptured {
  const result = Bun.spawnSync({
    cmd: [gitPath(), ...args],
    cwd,
    env: gitEnvironment(settings, cwd),
    stdin: input === undefined ? "ignore" : new TextEncoder().encode(input),
    stdout: "pipe",
    stderr: "pipe",
    timeout: settings.policy.timeoutMs,
    killSignal: "SIGKILL",
  });
  const stderr = result.exitedDueToTimeout ? `did not finish within ${settings.policy.timeoutMs} ms (options.gitTimeoutMs) and was killed` : result.stderr.toString();
  if (result.exitCode !== 0) throw new GitError(args, cwd, result.exitCode, stderr);
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr };
}

/** A git command that ran longer than options.gitTimeoutMs; its whole process group was killed. */
class GitTimeoutError extends Error {
  override name = "GitTimeoutError";
  constructor(args: readonly string[], cwd: string, timeoutMs: number) {
    super(`git ${args.join(" ")} in ${cwd} did not finish within ${timeoutMs} ms (options.gitTimeoutMs); it and every process it started were killed`);
  }
}

/** The git process a lock holder is waiting for, so a takeover can kill it. */
export interface ChildTracker {
  started(child: { pid: number; startTicks: number }): void;
  finished(): void;
}

/**
 * The gate git runs behind, in its own session. `sh` waits for "go" on stdin (sent once the
 * child's identity is on record), starts a watchdog that keeps the other end of that pipe,
 * and becomes git. The runtime says "done" when git has ended. If instead the pipe closes
 * (the runtime died, however), the watchdog ends git's whole process group: SIGTERM so git
 * removes its lock files, then SIGKILL once git is gone (dead or a zombie nobody reaped yet:
 * an orphan's new parent may be slow to reap) or after 2 s. The watchdog ignores
 * SIGTERM (it is in that group) and leaves stdout/stderr alone, so it never keeps our read
 * of git's stderr open.
 */
/** A git started behind GATE: its stdin is the gate's and the watchdog's. */
type GatedGit = Bun.Subprocess<"pipe", number | "pipe", "pipe" | "inherit">;

const GATE = [
  "read -r go || exit 1",
  "exec 3<&0 </dev/null",
  '( trap "" TERM INT HUP; read -r why <&3; [ "$why" = done ] && exit 0; kill -TERM 0; n=0; ' +
    'while [ $n -lt 20 ] && kill -0 $$ && ! ps -o stat= -p $$ | grep -q Z; do sleep 0.1; n=$((n+1)); done; kill -KILL 0 ) >/dev/null 2>&1 &',
  'exec "$@" 3<&-',
].join("\n");

/** How long the watchdog gives git after SIGTERM before SIGKILL (its loop: 20 × 0.1 s). */
const GIT_STOP_GRACE_MS = 2000;

/**
 * Runs a git command that changes the disk (clone, worktree add, fetch, checkout). On a
 * terminal its output is shown live (with progress) on our stderr; otherwise it is captured,
 * quoted on failure and forwarded escaped on success.
 *
 * git runs in its own session behind GATE. The child's identity is recorded before the gate
 * opens, so if we are killed at any instant either git never started, or the watchdog ends it
 * at once (and its identity is on record for whoever takes over the workspace). After
 * `settings.policy.timeoutMs` git's whole process group is killed and GitTimeoutError thrown.
 */
export async function gitRun(cwd: string, args: readonly string[], tracker: ChildTracker, settings: GitSettings = LOCAL_GIT): Promise<void> {
  const live = isTerminal(2);
  const proc = Bun.spawn({
    cmd: ["/bin/sh", "-c", GATE, "paseo-git-gate", gitPath(), ...args],
    cwd,
    env: gitEnvironment(settings, cwd),
    stdin: "pipe",
    // Never our stdout (the protocol's). On a terminal git shows its progress there as it
    // would run by hand; otherwise what it prints is collected and forwarded escaped.
    stdout: live ? 2 : "pipe",
    stderr: live ? "inherit" : "pipe",
    detached: true,
  });
  // Taken while git is our unreaped child: it proves git's group even once git was reaped.
  const group = GroupHandle.open(proc.pid);
  const gate = openGate(proc, tracker);
  let stopping: Promise<void> | null = null;
  const timer = setTimeout(() => (stopping = expire(proc, gate, group)), settings.policy.timeoutMs);
  const [printed, stderr] = live ? ["", ""] : await Promise.all([new Response(proc.stdout as ReadableStream).text(), new Response(proc.stderr as ReadableStream).text()]);
  const code = await proc.exited;
  clearTimeout(timer);
  if (stopping) await stopping;
  else if (gate.open) tellWatchdog(proc, "done");
  group?.close();
  tracker.finished();
  if (stopping) throw new GitTimeoutError(args, cwd, settings.policy.timeoutMs);
  if (code !== 0) {
    // What it printed on stdout stays visible, as it was when git's stdout was our stderr.
    if (printed.trim() !== "") forward(printed);
    throw new GitError(args, cwd, proc.exitCode, live ? "(see git's output above)" : stderr);
  }
  // Warnings of a successful git stay visible to whoever reads our stderr.
  if (!live && `${printed}${stderr}`.trim() !== "") forward(`${printed}${stderr}`);
}

/** The child's start time (-1 when unknown), and whether its gate opened: if not, its pipe is closed already. */
interface Gate {
  startTicks: number;
  open: boolean;
}

/**
 * Records the child and opens the gate. The gate opens only once the identity is on record;
 * otherwise EOF makes `read` fail and git never runs (also when recording throws).
 */
function openGate(proc: GatedGit, tracker: ChildTracker): Gate {
  let opened = false;
  try {
    const info = readProcess(proc.pid);
    if (!info) return { startTicks: -1, open: false };
    tracker.started({ pid: proc.pid, startTicks: info.startTicks });
    proc.stdin.write("go\n");
    void proc.stdin.flush();
    opened = true;
    return { startTicks: info.startTicks, open: true };
  } finally {
    if (!opened) void proc.stdin.end();
  }
}

/**
 * Ends a git whose time is up the way the runtime's death would: closing the pipe sets the
 * watchdog off (SIGTERM, then SIGKILL), so the kill completes even if we die meanwhile. Then
 * whatever is left gets SIGKILL (the watchdog itself, or everything if it never ran), and we
 * wait until the group and session are empty.
 */
async function expire(proc: GatedGit, gate: Gate, group: GroupHandle | null): Promise<void> {
  if (gate.open) tellWatchdog(proc, null);
  await Promise.race([proc.exited, Bun.sleep(GIT_STOP_GRACE_MS + 1000)]);
  await stopWorkload({ pid: proc.pid, startTicks: gate.startTicks, bootId: bootId() }, 0, group);
}

/** Sends the watchdog of an opened gate its last line (none: it ends git) and closes the pipe (the watchdog may be gone already). */
function tellWatchdog(proc: GatedGit, line: string | null): void {
  // The watchdog is gone (EPIPE): nothing listens.
  tolerating(PEER_GONE, undefined, () => {
    if (line !== null) proc.stdin.write(`${line}\n`);
    void proc.stdin.end();
  });
}

/** git's words, which may be a server's (`remote: …`) or a commit subject: redacted, and escaped but for the line breaks. */
function forward(text: string): void {
  const safe = printableLines(redactCredentials(text));
  writeAll(2, safe.endsWith("\n") ? safe : `${safe}\n`);
}
