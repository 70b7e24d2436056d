/**
 * The cgroup hierarchy of cgroup containment, and the making of its cgroups:
 *
 *   <cgroupRoot>/                        options.cgroupRoot, else this process's own cgroup
 *     paseo-<sha256(home)[:16]>/         one per runtime home; no processes, only workspaces
 *       w-<sha256(workspaceId)[:32]>/    one per workspace; its limits (memory.max…) live here
 *         e-<sha256(execId)[:32]>/       one per execution: the workload and all it starts
 *
 * The root and the home's cgroup come with the containment (resolve.ts); what runs in a cgroup
 * is signalled and ended, and the cgroup removed, by cgroup-scope.ts. A cgroup's path is
 * recorded before it is made, so destroy finds it even after a crash in between.
 */
import type { Database } from "bun:sqlite";
import { dirname, join } from "node:path";
import { availableControllers, delegateControllers, isCgroup, makeCgroup, writeInterface } from "../platform/cgroup.ts";
import type { RuntimeOptions } from "../options.ts";
import { writeTransaction } from "../store/db.ts";
import { updateWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { checkLimits, limitsOf, type Containment } from "./resolve.ts";

/** `<prefix>-<sha256(id)[:32]>`: an id reaches the hierarchy only through its hash. */
function nameOf(prefix: string, id: string): string {
  return `${prefix}-${new Bun.CryptoHasher("sha256").update(id).digest("hex").slice(0, 32)}`;
}

/** The workspace's cgroup under a home cgroup. */
function workspaceCgroupOf(homeCgroup: string, workspaceId: string): string {
  return join(homeCgroup, nameOf("w", workspaceId));
}

/** The execution's cgroup under its workspace's. */
function executionCgroupOf(workspaceCgroup: string, execId: string): string {
  return join(workspaceCgroup, nameOf("e", execId));
}

/** Where an execution runs under cgroup containment: its workspace's cgroup, and its own below. */
export interface ExecutionCgroups {
  workspace: string;
  execution: string;
}

/**
 * The workspace's and the execution's cgroups, or null without cgroup containment. The
 * workspace's is recorded on its row the first time (inside the caller's transaction, which
 * read `record`), so destroy finds it whatever the options say later. Makes nothing.
 */
export function executionCgroupsOf(db: Database, record: WorkspaceRecord, execId: string, containment: Containment): ExecutionCgroups | null {
  if (containment.kind !== "cgroup") return null;
  const workspace = record.cgroup ?? workspaceCgroupOf(containment.homeCgroup, record.workspaceId);
  if (record.cgroup === null) updateWorkspace(db, record.workspaceId, { cgroup: workspace });
  return { workspace, execution: executionCgroupOf(workspace, execId) };
}

/** Makes the execution's cgroup once it is on record, and its workspace's (with its limits) when that is gone. */
export function makeExecutionCgroup(containment: Extract<Containment, { kind: "cgroup" }>, options: RuntimeOptions, where: ExecutionCgroups): void {
  if (!isCgroup(where.workspace)) prepareWorkspaceCgroup(containment, options, where.workspace);
  makeCgroup(where.execution);
}

/**
 * Makes the workspace's cgroup `dir` (its recorded path) and the home's above it when missing,
 * and writes its limits: the value asked for, or "max" for a limit no longer asked for whose
 * file exists.
 */
function prepareWorkspaceCgroup(containment: Extract<Containment, { kind: "cgroup" }>, options: RuntimeOptions, dir: string): void {
  const controllers = checkLimits(containment, options);
  const home = dirname(dir);
  if (!isCgroup(dirname(home))) throw new Error(`cgroup root ${dirname(home)} no longer exists; resume the workspace to move its cgroup under the current one`);
  // A concurrent destroy may remove the (then empty) home cgroup between the two mkdirs.
  for (let attempt = 0; ; attempt++) {
    makeCgroup(home);
    if (controllers.length > 0) {
      delegateControllers(dirname(home), controllers);
      delegateControllers(home, controllers);
    }
    try {
      makeCgroup(dir);
      break;
    } catch (error) {
      if (attempt >= 3 || isCgroup(home)) throw error;
    }
  }
  for (const limit of limitsOf(options)) {
    if (limit.value !== undefined) writeInterface(dir, limit.file, limit.value);
    else if (availableControllers(dir).includes(limit.controller)) writeInterface(dir, limit.file, "max");
  }
}

/**
 * create and resume: the workspace's cgroup gets its limits. It is made now when limits are
 * asked for or one exists already; otherwise the first exec makes it. Its path is recorded
 * before it is made, so destroy finds it even after a crash in between.
 */
export function applyWorkspaceLimits(db: Database, workspaceId: string, recorded: string | null, containment: Containment, options: RuntimeOptions): void {
  const wanted = checkLimits(containment, options);
  if (containment.kind !== "cgroup" || (wanted.length === 0 && recorded === null)) return;
  const dir = recorded ?? workspaceCgroupOf(containment.homeCgroup, workspaceId);
  if (recorded === null) writeTransaction(db, () => updateWorkspace(db, workspaceId, { cgroup: dir }));
  prepareWorkspaceCgroup(containment, options, dir);
}
