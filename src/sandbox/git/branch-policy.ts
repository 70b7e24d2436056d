/**
 * The branch policy of a sandboxed workspace's git bridge. The rule:
 *
 *   A branch the workload changed moves in the user's repository to the workspace's commit, by
 *   compare-and-swap from the value the workspace was last given, unless
 *   - the user moved it (or made one of that name) since;
 *   - it is checked out in a worktree other than the workspace's own;
 *   - a rebase or bisect is under way on it in any worktree;
 *   - a commit it brings adds a submodule entry at a path that is not one of the user's
 *     submodules (whatever the checkout kind: the user's git would follow that path's `.git`,
 *     which the workload wrote);
 *   - its name and one of the user's branches cannot both exist (`a` and `a/b`).
 *   A branch kept stays at its namespace ref, with the reason in the log. When the branch the
 *   user's checkout is on moves, its index is carried forward from the two commits, never
 *   taken from the workload's.
 *
 * Whatever the number of branches: one listing, one look at the commits they bring, one ref
 * transaction (split only when it fails), and a bounded number of log lines.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { logLine } from "../../log/runtime-log.ts";
import { PATH_MISSING, tolerating } from "../../platform/errno.ts";
import { GitError, gitCapture } from "../../workspace/git.ts";
import { fileIdentity, namespaceOf, refLines, settingsOf, userGit, type GitSyncContext, type SyncState } from "./sync-state.ts";
import { readHead } from "./private-git.ts";

/** Each branch moved or kept gets a log line of its own up to this many per sync; the rest are counted in one line. */
const LOGGED_EACH = 20;

interface Move {
  ref: string;
  to: string;
  given: string | undefined;
}

/** A move not made, and why. */
type Kept = Move & { reason: string };

/**
 * Applies the rule to `branches` (refs/heads/… of P, whose commits are at the namespace at
 * `values`); returns the branches now at the workspace's value in the user's repository, and
 * records them in `next.base`.
 */
export function moveBranches(ctx: GitSyncContext, branches: readonly string[], next: SyncState, values: Readonly<Record<string, string>>): string[] {
  if (branches.length === 0) return [];
  const heads = refLines(userGit(ctx, ["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads"]));
  const { holders, busy } = worktreeBranches(ctx);
  const foreign = foreignSubmodules(ctx, branches.map((ref) => values[ref]!), next.submodules);
  const taken = refDirectories(heads.keys());
  const moves: Move[] = [];
  const kept: Kept[] = [];
  const already: string[] = [];
  for (const ref of branches) {
    const move = { ref, to: values[ref]!, given: next.base[ref] };
    const theirs = heads.get(ref);
    if (theirs === move.to) already.push(ref);
    else {
      const reason = whyKept(ctx, move, theirs, { holders, busy, foreign, taken });
      if (reason === null) moves.push(move);
      else kept.push({ ...move, reason });
    }
  }
  const { done, refused } = applyMoves(ctx, moves);
  kept.push(...refused);
  for (const { ref, to } of done) next.base[ref] = to;
  for (const ref of already) next.base[ref] = values[ref]!;
  logOutcome(ctx, done, kept);
  const checkedOut = readHead(ctx.user.gitDir);
  const own = done.find((move) => checkedOut === `ref: ${move.ref}`);
  if (own) refreshIndex(ctx, own.given, own.to, next);
  return [...already, ...done.map((move) => move.ref)];
}

/** What the user's repository says of its branches, and which commits bring foreign submodules. */
interface BranchUse {
  holders: Map<string, string>;
  busy: Map<string, string>;
  /** Commit → why it may not become a branch of the user's (foreignSubmodules). */
  foreign: Map<string, string>;
  /** Every directory the user's branch names make (`refs/heads/a` for `refs/heads/a/b`). */
  taken: { names: Set<string>; directories: Set<string> };
}

/** Why `move` is not made (the rule at the top of the file), or null. */
function whyKept(ctx: GitSyncContext, move: Move, theirs: string | undefined, use: BranchUse): string | null {
  const { ref, to, given } = move;
  if (theirs !== given) return given === undefined ? `the branch was made in your repository meanwhile (at ${theirs})` : `the branch was moved in your repository (to ${theirs}) since the workspace was given ${given}`;
  const holder = use.holders.get(ref);
  if (holder !== undefined && holder !== ctx.user.top) return `the branch is checked out at ${holder}`;
  const busy = use.busy.get(ref);
  if (busy !== undefined) return `the branch is being rebased or bisected at ${busy}`;
  const foreign = use.foreign.get(to);
  if (foreign !== undefined) return foreign;
  if (given === undefined && (use.taken.directories.has(ref) || ancestorsOf(ref).some((dir) => use.taken.names.has(dir)))) return "its name and a branch of yours cannot both exist (one is a directory of the other)";
  return null;
}

function ancestorsOf(ref: string): string[] {
  const parts = ref.split("/");
  return parts.slice(2, -1).map((_, i) => parts.slice(0, i + 3).join("/"));
}

function refDirectories(names: Iterable<string>): BranchUse["taken"] {
  const taken = { names: new Set<string>(), directories: new Set<string>() };
  for (const name of names) {
    taken.names.add(name);
    for (const dir of ancestorsOf(name)) taken.directories.add(dir);
  }
  return taken;
}

/**
 * The moves, by compare-and-swap, in one `update-ref --stdin` transaction. git refuses a whole
 * transaction for one ref it cannot update (the user moved it that instant, a lock of theirs):
 * then each half is tried alone, so one bad ref costs a few processes, never one per ref.
 */
function applyMoves(ctx: GitSyncContext, moves: Move[]): { done: Move[]; refused: Kept[] } {
  if (moves.length === 0) return { done: [], refused: [] };
  const lines = moves.map(({ ref, to, given }) => `update ${ref} ${to} ${given ?? "0".repeat(to.length)}\n`).join("");
  try {
    userGit(ctx, ["update-ref", "-m", `paseo-host-runtime: workspace ${ctx.workspaceId}`, "--stdin"], lines);
    return { done: moves, refused: [] };
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    if (moves.length === 1) return { done: [], refused: [{ ...moves[0]!, reason: error.stderr.trim().split("\n").at(-1) || error.message }] };
    const half = Math.ceil(moves.length / 2);
    const [first, second] = [applyMoves(ctx, moves.slice(0, half)), applyMoves(ctx, moves.slice(half))];
    return { done: [...first.done, ...second.done], refused: [...first.refused, ...second.refused] };
  }
}

/** One line per branch up to LOGGED_EACH of each kind, then one line counting the rest. */
function logOutcome(ctx: GitSyncContext, done: Move[], kept: Kept[]): void {
  const namespace = namespaceOf(ctx.workspaceId);
  const branch = (ref: string) => ref.slice("refs/heads/".length);
  for (const { ref, to, given } of done.slice(0, LOGGED_EACH)) {
    const fastForward = given === undefined ? null : isAncestor(ctx, given, to);
    const note = fastForward === false ? { note: `not a fast-forward (an amend or rebase in the workspace): ${given} stays in the branch's reflog` } : {};
    logLine("info", "git-branch-moved", { workspaceId: ctx.workspaceId, branch: branch(ref), from: given ?? null, to, fastForward, ...note });
  }
  if (done.length > LOGGED_EACH) logLine("info", "git-branches-moved", { workspaceId: ctx.workspaceId, count: done.length - LOGGED_EACH, note: "more branches moved than are named one by one; each keeps its previous tip in its reflog" });
  for (const { ref, to, given, reason } of kept.slice(0, LOGGED_EACH)) {
    logLine("info", "git-branch-kept", { workspaceId: ctx.workspaceId, branch: branch(ref), from: given ?? null, to, keptAt: `${namespace}/${ref}`, reason: `${reason}; not moved: the workspace's commits are at ${namespace}/${ref}` });
  }
  if (kept.length > LOGGED_EACH) logLine("info", "git-branches-kept", { workspaceId: ctx.workspaceId, count: kept.length - LOGGED_EACH, keptAt: `${namespace}/refs/heads/`, reason: "more branches kept than are named one by one: their commits are at the workspace's namespace refs" });
}

/**
 * Which of `tips` may not become branches of the user's, and why: a commit they bring (one on
 * no branch or tag of theirs) adds a submodule entry (a gitlink) at a path that is not one of
 * the user's submodules. The workload can write any directory of its checkout, a `.git` in it
 * included, and the user's git follows a gitlink's `.git` as a repository of its own: with that
 * commit checked out, the user's `git status` would read the workload's config. One `git log`
 * for all tips; which tip brings which commit is then a walk of the new commits in memory.
 */
function foreignSubmodules(ctx: GitSyncContext, tips: readonly string[], submodules: readonly string[]): Map<string, string> {
  const reasons = new Map<string, string>();
  if (tips.length === 0) return reasons;
  // -m: a merge's changes against each parent; --root: an orphan branch's first commit; the tips on stdin.
  const argv = ["log", "-z", "--format=%x01%H %P", "--raw", "-r", "-m", "--root", "--no-renames", "--no-abbrev", "--stdin", "--not", "--branches", "--tags", "--"];
  const commits = new Map<string, { parents: string[]; added: string[] }>();
  for (const chunk of userGit(ctx, argv, `${[...new Set(tips)].join("\n")}\n`).split("\x01")) {
    const fields = chunk.split("\0");
    const [id, ...parents] = fields[0]!.trim().split(" ");
    if (!id) continue;
    const commit = commits.get(id) ?? { parents, added: [] };
    commits.set(id, commit);
    for (let i = 1; i < fields.length - 1; i++) {
      const raw = /^\n*:\d{6} (\d{6}) /.exec(fields[i]!);
      if (raw?.[1] === "160000" && !submodules.includes(fields[i + 1]!)) commit.added.push(fields[i + 1]!);
    }
  }
  const reach = reachingAdded(commits);
  for (const tip of tips) {
    const added = reach.get(tip);
    if (added && added.length > 0) reasons.set(tip, foreignReason(added));
  }
  return reasons;
}

/** For each new commit, the foreign submodule paths added by it or by a new commit it descends from (iterative: chains are the workload's length). */
function reachingAdded(commits: Map<string, { parents: string[]; added: string[] }>): Map<string, string[]> {
  const reach = new Map<string, string[]>();
  for (const start of commits.keys()) {
    const stack = [start];
    while (stack.length > 0) {
      const id = stack.at(-1)!;
      if (reach.has(id)) {
        stack.pop();
        continue;
      }
      const commit = commits.get(id)!;
      const waiting = commit.parents.filter((parent) => commits.has(parent) && !reach.has(parent));
      if (waiting.length > 0) {
        stack.push(...waiting);
        continue;
      }
      const added = new Set(commit.added);
      for (const parent of commit.parents) for (const path of reach.get(parent) ?? []) if (added.size < 4) added.add(path);
      reach.set(id, [...added]);
      stack.pop();
    }
  }
  return reach;
}

function foreignReason(added: string[]): string {
  const paths = added.slice(0, 3).map((path) => JSON.stringify(path)).join(", ");
  return `its commits add a submodule at ${paths}${added.length > 3 ? " and more" : ""}, which is not one of your checkout's: its directory there is the workload's to write, a .git included, which your git would then follow`;
}

/** Branch ref → path of the worktree that has it checked out, from `git worktree list`. */
function worktreeBranches(ctx: GitSyncContext): { holders: Map<string, string>; busy: Map<string, string> } {
  const holders = new Map<string, string>();
  let path = "";
  let main: string | null = null;
  for (const line of userGit(ctx, ["worktree", "list", "--porcelain"]).split("\n")) {
    if (line.startsWith("worktree ")) {
      path = line.slice("worktree ".length);
      main ??= path;
    } else if (line.startsWith("branch ")) holders.set(line.slice("branch ".length), path);
  }
  return { holders, busy: busyBranches(ctx.user.commonDir, main) };
}

/**
 * Branches a rebase or a bisect is under way on, in any worktree (its HEAD is detached then, so
 * `worktree list` does not name them; git itself refuses to move them): ref → worktree path.
 * The user's own checkout counts too: a rebase in the user's git dir is the user's.
 */
function busyBranches(commonDir: string, main: string | null): Map<string, string> {
  const read = (file: string) => tolerating(PATH_MISSING, null, () => readFileSync(file, "utf8").trim());
  const admins: [string, string][] = main === null ? [] : [[commonDir, main]];
  const linked = join(commonDir, "worktrees");
  for (const name of tolerating(PATH_MISSING, [] as string[], () => readdirSync(linked))) {
    const dotGit = read(join(linked, name, "gitdir"));
    if (dotGit !== null) admins.push([join(linked, name), dirname(dotGit)]);
  }
  const busy = new Map<string, string>();
  for (const [admin, path] of admins) {
    for (const file of ["rebase-merge/head-name", "rebase-apply/head-name"]) {
      const ref = read(join(admin, file));
      if (ref?.startsWith("refs/heads/")) busy.set(ref, path);
    }
    const bisected = read(join(admin, "BISECT_START"));
    if (bisected) busy.set(`refs/heads/${bisected}`, path);
  }
  return busy;
}

/** Whether `older` is an ancestor of `newer` (git's exit 1: no); null when git could not tell (an object missing). */
function isAncestor(ctx: GitSyncContext, older: string, newer: string): boolean | null {
  try {
    userGit(ctx, ["merge-base", "--is-ancestor", older, newer]);
    return true;
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    return error.exitCode === 1 ? false : null;
  }
}

/**
 * The user's checkout's index after its branch moved from `from` to `to`: carried forward like
 * a checkout would (`read-tree -m`, which keeps what the user staged); if that cannot be done,
 * the index of `to` itself. Trusted data only: two commits and the user's own index.
 */
function refreshIndex(ctx: GitSyncContext, from: string | undefined, to: string, next: SyncState): void {
  const gitDir = ["--git-dir", ctx.user.gitDir];
  try {
    gitCapture("/", [...gitDir, "read-tree", ...(from === undefined ? [to] : ["-m", from, to])], settingsOf(ctx));
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    try {
      gitCapture("/", [...gitDir, "read-tree", to], settingsOf(ctx));
      logLine("info", "git-index-reset", { workspaceId: ctx.workspaceId, index: join(ctx.user.gitDir, "index"), to, reason: `could not be carried forward (${error.message.split("\n").at(-1)?.trim()}); it now matches ${to}, the files are untouched` });
    } catch (reset) {
      if (!(reset instanceof GitError)) throw reset;
      logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the index of ${ctx.user.top} was not refreshed: ${reset.message}` });
      return;
    }
  }
  // Our own rewrite of the user's index is not a change of theirs to copy back over P's.
  if (next.user) next.user = { ...next.user, index: fileIdentity(join(ctx.user.gitDir, "index")) };
}
