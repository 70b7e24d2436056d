/**
 * What a placement intent asks git to check out, independent of where (a worktree of the
 * user's repository, or a private clone). Pure: no disk, no git.
 */
import type { PlacementIntent } from "../protocol/index.ts";

export type RefAction =
  /** Use the source as it is. */
  | { type: "existing" }
  /** Make branch `branch` at `base`; an existing branch of that name is an error. */
  | { type: "new-branch"; branch: string; base: string }
  /** Check out `ref` (normally an existing branch). */
  | { type: "checkout"; ref: string }
  /** Fetch the first of `refs` that can be fetched into branch `branch` (fast-forward only), then check it out. */
  | { type: "fetch-branch"; refs: { remote: string; ref: string }[]; branch: string };

/** The git action a placement intent stands for. */
export function refAction(placement: PlacementIntent): RefAction {
  switch (placement.kind) {
    case "existing":
      return { type: "existing" };
    case "branch":
      return { type: "new-branch", branch: placement.branchName, base: placement.baseRef };
    case "checkout":
      return { type: "checkout", ref: placement.ref };
    case "resolved-worktree": {
      const source = placement.source;
      if (source.kind === "branch-off") return { type: "new-branch", branch: source.branchName, base: source.baseBranch };
      if (source.kind === "checkout-branch") return { type: "checkout", ref: source.branchName };
      // A change request (GitHub PR or other forge): its head is fetched into a local branch.
      const listed = source.checkoutRefs?.length ? source.checkoutRefs : [{ remoteRef: source.headRef }];
      const refs = listed.map((ref) => ({ remote: ref.remoteName ?? "origin", ref: ref.remoteRef }));
      return { type: "fetch-branch", refs, branch: source.localBranchName ?? localBranchFor(source.headRef) };
    }
  }
}

/** A local branch named after a remote head ref: "refs/heads/x" → "x", "owner:x" → "x". */
function localBranchFor(headRef: string): string {
  const withoutPrefix = headRef.replace(/^refs\/heads\//, "");
  return withoutPrefix.slice(withoutPrefix.lastIndexOf(":") + 1);
}
