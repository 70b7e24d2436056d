import { heldGitOf } from "../sandbox/git/sandbox-git.ts";
import type { Invocation } from "../argv.ts";
import { requireSandbox } from "../sandbox/tool.ts";
import { withStore } from "../store/db.ts";
import { resolveHome } from "../store/home.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { once } from "../platform/lazy.ts";
import { applyWorkspaceLimits } from "../containment/cgroup-tree.ts";
import { checkLimits, resolveContainment, wantsLimits } from "../containment/resolve.ts";
import { branchMadeFor, claimCreate, finishCreate, madeFreshContent, noteIntent, recoverAbandoned, undoCreate } from "../workspace/create.ts";
import { createInputOf, effectiveHostDirectory, hostSourceDirectory, isDirectorySource, keptInput } from "../workspace/input.ts";
import { childTracker, repoGuard } from "../workspace/lock.ts";
import { materialize } from "../workspace/materialize.ts";
import { workloadWrittenSource } from "../sandbox/git/workload-sources.ts";
import { stateResponse } from "../workspace/state.ts";
import { respond } from "../protocol/request.ts";
import { readLifecycleCall } from "../workspace/call.ts";
import { requestedIsolation } from "../sandbox/settings.ts";
import { makeSandboxGit } from "../sandbox/git/sandbox-git.ts";

/**
 * `create`: idempotent. Everything is checked before anything changes; the intent is recorded
 * before the disk is touched; a failure removes what this create made, and a create killed
 * midway is cleaned up by the next one. The later dialect's answer says whether this call made
 * fresh content (materializedFreshContent): a repeat create or an adopted directory did not.
 */
export async function create(invocation: Invocation): Promise<number> {
  const { request, options, owner } = readLifecycleCall();
  // Fail closed: a workspace meant to be sandboxed is never made usable without a working sandbox.
  if (options.isolation === "sandbox") requireSandbox(options);
  const checked = createInputOf(request, invocation.flags.get("workspace-id")!, options.allowedGitProtocols);
  const hostDirectory = effectiveHostDirectory(checked, options.hostDirectory);
  const policy = { protocols: options.allowedGitProtocols, timeoutMs: options.gitTimeoutMs };
  // Refused before anything changes: containment "cgroup" without a usable hierarchy, or limits
  // it cannot apply. Resolving reads the mount table and this process's cgroup (~1 ms), so
  // without either it waits for a workspace whose cgroup is already on record (the only other
  // case applyWorkspaceLimits acts on).
  const containment = once(() => resolveContainment(options, resolveHome(options)));
  const checkedFirst = options.containment === "cgroup" || wantsLimits(options);
  if (checkedFirst) checkLimits(containment(), options);
  return withStore(options, async ({ db, home }) => {
    // From here on only the kept input exists: its URLs carry no credential.
    const kept = keptInput(home, checked);
    const { input } = kept;
    // Resolved once: the directory checked is the one materialized (a symbolic link the workload flips between the two is not followed again).
    const sourceDirectory = isDirectorySource(input.project.source) ? hostSourceDirectory(input.project.source.path) : null;
    if (sourceDirectory !== null) {
      const written = workloadWrittenSource(db, sourceDirectory, input.workspaceId);
      if (written !== null) throw new Error(written);
    }
    const isolation = requestedIsolation(options);
    const claim = await claimCreate(db, kept, owner, hostDirectory, isolation);
    if (claim.existing) {
      respond(stateResponse(claim.existing, options, owner.dialect, false), owner.dialect);
      return 0;
    }
    if (claim.abandoned) await recoverAbandoned(db, home, claim.abandoned, kept, hostDirectory, isolation, heldGitOf);
    let record;
    try {
      const built = await materialize({
        home,
        input,
        sourceDirectory,
        git: { policy, credential: kept.credential ?? undefined },
        hostDirectory,
        note: noteIntent(db, input.workspaceId),
        tracker: childTracker(db, input.workspaceId),
        guard: repoGuard(db),
        madeBranch: branchMadeFor(db, input.workspaceId, owner),
      });
      const recorded = getWorkspace(db, input.workspaceId)?.cgroup ?? null;
      if (checkedFirst || recorded !== null) applyWorkspaceLimits(db, input.workspaceId, recorded, containment(), options);
      record = finishCreate(db, input.workspaceId, built);
      // A sandboxed workspace's private git dir exists before its first exec (made there otherwise).
      if (isolation.isolation === "sandbox") makeSandboxGit(home, record, options.gitTimeoutMs);
    } catch (error) {
      await undoCreate(db, home, input.workspaceId, heldGitOf);
      throw error;
    }
    respond(stateResponse(record, options, owner.dialect, madeFreshContent(record.kind!)), owner.dialect);
    return 0;
  });
}
