import type { Database } from "bun:sqlite";
import type { ProcessIdentity } from "../platform/process.ts";
import type { Dialect } from "../protocol/index.ts";
import { fromSettingsColumn, settingsColumn, type RecordedIsolation } from "../sandbox/settings.ts";
import { now } from "./db.ts";

export type { ProcessIdentity };

/**
 * creating: intent recorded, materialization under way (or abandoned by a dead creator);
 * ready / paused: a usable workspace; destroying: removal under way, or stopped before it
 * removed everything (destroyProblem says why when it could say; a destroy again finishes it).
 */
export type WorkspaceStatus = "creating" | "ready" | "paused" | "destroying";

/**
 * The one rule of what is not a workspace (yet): a create under way or abandoned counts as
 * missing, since nothing usable was ever answered for it; create again, destroy or reconcile
 * reach what it left. A destroy under way or stopped does not: what it has not removed is still
 * the workspace's, reported as an error until a destroy finishes (workspace/lock.ts
 * unfinishedDestroy), so that it never belongs to nobody.
 */
export function countsAsMissing(status: WorkspaceStatus): boolean {
  return status === "creating";
}

/** How the root came to be: adopted in place, or owned storage under the runtime home. */
export type MaterializationKind = "adopted" | "copy" | "clone" | "worktree";

/** Durable facts about what a create made, so destroy and crash recovery undo exactly that. */
export interface WorkspaceDetails {
  /** Owned checkout, copy or worktree directory (inside the workspace's storage directory). */
  checkout?: string;
  /** The user's repository a worktree was added to (top level) and its common git dir. */
  repo?: string;
  commonDir?: string;
  /** Branch checked out when created ("" when detached or not git): PASEO_BRANCH_NAME. */
  branch?: string;
  /** Commit checked out when created, to re-add a detached worktree. */
  head?: string;
  /** A branch this create made or moved in the user's repository: undone only if the create fails. */
  branchChange?: { name: string; before: string | null; after: string | null };
  /** Our own ref a change request's head is fetched into before its branch moves (deleted after). */
  scratchRef?: string;
  /** A paseo.json this create copied into the root: removed again only if the create fails. */
  seeded?: { from: string; into: string };
  /** Set when a destroy took over a create that never finished: a destroy resuming it still undoes that create. */
  abandonedCreate?: boolean;
  /** Recorded from the create input; no other effect yet. */
  markFirstAgentBranchAutoName?: boolean;
  /**
   * An adopted directory at the top of a working tree: the git dir its `.git` names and the
   * repository's common dir, as they were at create (the sandbox never takes them from `.git`).
   * null: the root was not the top of a working tree then, and any `.git` there since is the
   * workspace's own. Absent only in a record made before the runtime kept them (fixed at its
   * first sandboxed exec, src/sandbox/git/sandbox-git.ts).
   */
  git?: { gitDir: string; commonDir: string; dotGit: "directory" | "file" } | null;
}

/**
 * What a workspace's root was when its create finished, so that every later use can prove it
 * is still that directory (src/workspace/confinement.ts). Identities are `device:inode`.
 */
export interface Confinement {
  /** The root directory itself. */
  root: string;
  /** The owned checkout, copy or worktree the root lies in; null for an adopted directory. */
  checkout: string | null;
  /** A worktree's registration `<commonDir>/worktrees/<name>`, which its `.git` file names; else null. */
  gitdir: string | null;
}

/** One workspace row. */
export interface WorkspaceRecord {
  workspaceId: string;
  owner: string;
  /** The protocol dialect it was created in; requests in the other dialect are refused. */
  dialect: Dialect;
  /** The later dialect's runtimeInstanceId of the daemon that created it (null in the seed dialect). */
  instanceId: string | null;
  /** Fingerprint of the daemon configuration it belongs to (null: created before schema v2). */
  configuration: string | null;
  status: WorkspaceStatus;
  /** The create input, as validated (canonical key order), without URL credentials. */
  input: unknown;
  /** Keyed digest of the full create input, credentials included (store/input-digest.ts). */
  inputDigest: string;
  /** The `hostDirectory` option in effect when created. */
  hostDirectory: "adopt" | "clone";
  kind: MaterializationKind | null;
  /** Absolute workspace root; null until the create finished. */
  root: string | null;
  details: WorkspaceDetails;
  /** The process running a long operation on this workspace, if any (it may have died). */
  lock: ProcessIdentity | null;
  lockOp: string | null;
  /** The git process the lock holder is waiting for (recorded with the holder's boot). */
  child: ProcessIdentity | null;
  /** Recorded when the create finished; null while creating, and for a workspace made before schema 2 until first used. */
  confinement: Confinement | null;
  createdAt: number;
  updatedAt: number;
  /** The workspace's cgroup directory once one was made (cgroup containment), else null. */
  cgroup: string | null;
  /** Why the last destroy stopped before it removed everything (status `destroying`), else null. */
  destroyProblem: string | null;
  /** When its configuration last listed it: its create, or a reconcile listing it. */
  listedAt: number;
  /** When a reconcile of another configuration of its owner took over its configuration and left it unlisted: an orphan. */
  orphanedAt: number | null;
  /**
   * The isolation it was created with (sandbox/settings.ts), which every later exec and resume
   * must at least meet (sandbox/isolation.ts); null for a workspace made before schema 4 until
   * its next resume or exec.
   */
  isolation: RecordedIsolation | null;
}

interface Row {
  workspace_id: string;
  owner: string;
  dialect: Dialect;
  instance_id: string | null;
  configuration: string | null;
  status: WorkspaceStatus;
  input_json: string;
  input_digest: string;
  host_directory: "adopt" | "clone";
  kind: MaterializationKind | null;
  root: string | null;
  details_json: string;
  lock_pid: number | null;
  lock_start: number | null;
  lock_boot: string | null;
  lock_op: string | null;
  child_pid: number | null;
  child_start: number | null;
  created_at: number;
  updated_at: number;
  root_identity: string | null;
  checkout_identity: string | null;
  worktree_gitdir: string | null;
  cgroup: string | null;
  destroy_problem: string | null;
  listed_at: number | null;
  orphaned_at: number | null;
  isolation: "none" | "sandbox" | null;
  sandbox_json: string | null;
}

function isolationOf(row: Row): RecordedIsolation | null {
  if (row.isolation === "sandbox") return fromSettingsColumn(row.sandbox_json);
  return row.isolation === "none" ? { isolation: "none" } : null;
}

/** The two columns a recorded isolation is stored in. */
function isolationColumns(isolation: RecordedIsolation | null): [string | null, string | null] {
  if (isolation === null) return [null, null];
  if (isolation.isolation === "none") return ["none", null];
  return ["sandbox", settingsColumn(isolation)];
}

function fromRow(row: Row): WorkspaceRecord {
  return {
    workspaceId: row.workspace_id,
    owner: row.owner,
    dialect: row.dialect,
    instanceId: row.instance_id,
    configuration: row.configuration,
    status: row.status,
    input: JSON.parse(row.input_json),
    inputDigest: row.input_digest,
    hostDirectory: row.host_directory,
    kind: row.kind,
    root: row.root,
    details: JSON.parse(row.details_json) as WorkspaceDetails,
    lock: row.lock_pid === null ? null : { pid: row.lock_pid, startTicks: row.lock_start ?? -1, bootId: row.lock_boot ?? "" },
    lockOp: row.lock_op,
    child: row.child_pid === null ? null : { pid: row.child_pid, startTicks: row.child_start ?? -1, bootId: row.lock_boot ?? "" },
    confinement: row.root_identity === null ? null : { root: row.root_identity, checkout: row.checkout_identity, gitdir: row.worktree_gitdir },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    cgroup: row.cgroup,
    destroyProblem: row.destroy_problem,
    listedAt: row.listed_at ?? row.created_at,
    orphanedAt: row.orphaned_at,
    isolation: isolationOf(row),
  };
}

/** One workspace by id (any status), or null. One primary-key lookup: cheap enough for every exec. */
export function getWorkspace(db: Database, workspaceId: string): WorkspaceRecord | null {
  const row = db.query("SELECT * FROM workspaces WHERE workspace_id = ?1").get(workspaceId) as Row | null;
  return row ? fromRow(row) : null;
}

/** Every workspace of this home (of one owner when given), oldest first. */
export function listWorkspaces(db: Database, owner?: string): WorkspaceRecord[] {
  const rows =
    owner === undefined
      ? db.query("SELECT * FROM workspaces ORDER BY created_at, workspace_id").all()
      : db.query("SELECT * FROM workspaces WHERE owner = ?1 ORDER BY created_at, workspace_id").all(owner);
  return (rows as Row[]).map(fromRow);
}

/** What a new row records about who made it; a row without these is a seed-dialect one of unknown configuration. */
interface Provenance {
  owner: string;
  dialect?: Dialect;
  instanceId?: string | null;
  configuration?: string | null;
}

/**
 * Records the intent to create a workspace, locked by `holder`. Fails if the id exists.
 * `input` must already be without credentials; `inputDigest` covers the full input.
 */
export function insertCreating(
  db: Database,
  row: Provenance & { workspaceId: string; input: unknown; inputDigest: string; hostDirectory: "adopt" | "clone"; holder: ProcessIdentity; op: string; isolation?: RecordedIsolation },
): void {
  const at = now();
  const [isolation, sandbox] = isolationColumns(row.isolation ?? null);
  db.query(
    `INSERT INTO workspaces (workspace_id, owner, dialect, instance_id, configuration, status, input_json, input_digest, host_directory, details_json,
       lock_pid, lock_start, lock_boot, lock_op, created_at, updated_at, listed_at, isolation, sandbox_json)
     VALUES (?1, ?2, ?3, ?4, ?5, 'creating', ?6, ?7, ?8, '{}', ?9, ?10, ?11, ?12, ?13, ?13, ?13, ?14, ?15)`,
  ).run(
    row.workspaceId,
    row.owner,
    row.dialect ?? "seed",
    row.instanceId ?? null,
    row.configuration ?? null,
    JSON.stringify(row.input),
    row.inputDigest,
    row.hostDirectory,
    row.holder.pid,
    row.holder.startTicks,
    row.holder.bootId,
    row.op,
    at,
    isolation,
    sandbox,
  );
}

/** Fields a caller may change on a row. */
interface WorkspacePatch {
  status?: WorkspaceStatus;
  input?: unknown;
  inputDigest?: string;
  hostDirectory?: "adopt" | "clone";
  kind?: MaterializationKind | null;
  root?: string | null;
  details?: WorkspaceDetails;
  lock?: { holder: ProcessIdentity; op: string } | null;
  child?: { pid: number; startTicks: number } | null;
  confinement?: Confinement | null;
  /** Reconcile adopts a listed workspace into the configuration that listed it. */
  configuration?: string;
  cgroup?: string | null;
  destroyProblem?: string | null;
  listedAt?: number;
  orphanedAt?: number | null;
  /** A create taking over an abandoned one, or a row of before schema 4 on its next resume or exec. */
  isolation?: RecordedIsolation;
}

/** Applies `patch` to a row; returns false when no such row exists. */
export function updateWorkspace(db: Database, workspaceId: string, patch: WorkspacePatch): boolean {
  const sets: string[] = [];
  const values: (string | number | null)[] = [];
  const set = (column: string, value: string | number | null) => {
    values.push(value);
    sets.push(`${column} = ?${values.length}`);
  };
  if (patch.status !== undefined) set("status", patch.status);
  if (patch.input !== undefined) set("input_json", JSON.stringify(patch.input));
  if (patch.inputDigest !== undefined) set("input_digest", patch.inputDigest);
  if (patch.hostDirectory !== undefined) set("host_directory", patch.hostDirectory);
  if (patch.kind !== undefined) set("kind", patch.kind);
  if (patch.root !== undefined) set("root", patch.root);
  if (patch.details !== undefined) set("details_json", JSON.stringify(patch.details));
  if (patch.lock !== undefined) {
    set("lock_pid", patch.lock?.holder.pid ?? null);
    set("lock_start", patch.lock?.holder.startTicks ?? null);
    set("lock_boot", patch.lock?.holder.bootId ?? null);
    set("lock_op", patch.lock?.op ?? null);
  }
  if (patch.child !== undefined) {
    set("child_pid", patch.child?.pid ?? null);
    set("child_start", patch.child?.startTicks ?? null);
  }
  if (patch.confinement !== undefined) {
    set("root_identity", patch.confinement?.root ?? null);
    set("checkout_identity", patch.confinement?.checkout ?? null);
    set("worktree_gitdir", patch.confinement?.gitdir ?? null);
  }
  if (patch.configuration !== undefined) set("configuration", patch.configuration);
  if (patch.cgroup !== undefined) set("cgroup", patch.cgroup);
  if (patch.destroyProblem !== undefined) set("destroy_problem", patch.destroyProblem);
  if (patch.listedAt !== undefined) set("listed_at", patch.listedAt);
  if (patch.orphanedAt !== undefined) set("orphaned_at", patch.orphanedAt);
  if (patch.isolation !== undefined) {
    const [isolation, sandbox] = isolationColumns(patch.isolation);
    set("isolation", isolation);
    set("sandbox_json", sandbox);
  }
  set("updated_at", now());
  values.push(workspaceId);
  const result = db.query(`UPDATE workspaces SET ${sets.join(", ")} WHERE workspace_id = ?${values.length}`).run(...values);
  return result.changes > 0;
}

/** Removes a workspace row (the last step of destroy). */
export function deleteWorkspace(db: Database, workspaceId: string): void {
  db.query("DELETE FROM workspaces WHERE workspace_id = ?1").run(workspaceId);
}

/** The holder of a repository's worktree lock, or null. */
export function getRepoLock(db: Database, commonDir: string): ProcessIdentity | null {
  const row = db.query("SELECT holder_pid AS pid, holder_start AS startTicks, holder_boot AS bootId FROM repo_locks WHERE common_dir = ?1").get(commonDir);
  return row as ProcessIdentity | null;
}

/** Records `holder` as the holder of a repository's worktree lock (replacing a dead one). */
export function setRepoLock(db: Database, commonDir: string, holder: ProcessIdentity): void {
  db.query("INSERT OR REPLACE INTO repo_locks (common_dir, holder_pid, holder_start, holder_boot) VALUES (?1, ?2, ?3, ?4)").run(commonDir, holder.pid, holder.startTicks, holder.bootId);
}

/** Releases a repository's worktree lock if `holder` holds it. */
export function deleteRepoLock(db: Database, commonDir: string, holder: ProcessIdentity): void {
  db.query("DELETE FROM repo_locks WHERE common_dir = ?1 AND holder_pid = ?2 AND holder_start = ?3 AND holder_boot = ?4").run(commonDir, holder.pid, holder.startTicks, holder.bootId);
}
