/**
 * The sandbox's git bridge under a flood (issue 30): a workload in a sandboxed worktree makes
 * `refs` branches and as many tags in one `update-ref --stdin`, then ends. Measured:
 *
 * - how long after the workload's last output `exit` arrives (the sync out after the exec,
 *   which publishes at most 1000 refs), against the same workload in a sandboxed directory
 *   without git;
 * - how long the destroy right after takes (every ref not yet published is fetched to the
 *   workspace's namespace, the namespace released, the private git dir removed), against the
 *   destroy of the same kind of workspace whose workload made one commit.
 *
 * Aims: `exit` within a few seconds of the workload's end (3 s), destroy within 10 s.
 */
import { BenchExec, describeFailure, envelope } from "./driver.ts";
import { gitWorktreeWorkspace } from "./exec-overhead.ts";
import { BIN, runProcess } from "./procs.ts";
import { figure, skipped, type Figure } from "./report.ts";

type Workspace = { id: string; options: Record<string, unknown> };

export interface FloodOptions {
  refs: number;
  sandboxed: (Workspace & { root: string }) | string;
}

const PATH = "/usr/local/bin:/usr/bin:/bin";
const IDENTITY = { GIT_AUTHOR_NAME: "b", GIT_AUTHOR_EMAIL: "b@b.invalid", GIT_COMMITTER_NAME: "b", GIT_COMMITTER_EMAIL: "b@b.invalid" };

/** The workload: a commit, then `refs` branches and `refs` tags at it, in one transaction; `end` is printed last. */
function floodScript(refs: number, git: boolean): string {
  const make = `{ i=0; while [ $i -lt ${refs} ]; do echo "create refs/heads/flood/b$i $h"; echo "create refs/tags/flood-t$i $h"; i=$((i+1)); done; }`;
  const repo = git ? "" : "git init -q . && ";
  return `${repo}git commit -q --allow-empty -m flood && h=$(git rev-parse HEAD) && ${make} | git update-ref --stdin && echo end`;
}

/** ms from the workload's last output (just before it exits) to the end of the exec (exit and EOFs in). */
async function exitAfterEnd(workspace: Workspace, script: string): Promise<number> {
  const exec = new BenchExec(workspace.id, envelope(["/bin/sh", "-c", script], { options: workspace.options, env: { PATH, ...IDENTITY } }));
  exec.closeStdin();
  const done = await exec.done;
  const failure = describeFailure(done);
  if (failure) throw new Error(`flood exec: ${failure}`);
  if (done.lastByteAt === null) throw new Error("flood exec printed nothing");
  return Number(done.endedAt - done.lastByteAt) / 1e6;
}

async function destroyMs(workspace: Workspace): Promise<number> {
  const started = performance.now();
  const result = await runProcess([BIN, "destroy", "--workspace-id", workspace.id], { stdin: `${JSON.stringify({ protocolVersion: 1, options: workspace.options })}\n` });
  if (result.code !== 0) throw new Error(`destroy failed: ${result.stderr}`);
  return performance.now() - started;
}

export async function floodFigures(options: FloodOptions): Promise<Figure[]> {
  const titles = {
    exit: `exit after a workload made ${options.refs} branches and ${options.refs} tags (sandboxed worktree)`,
    destroy: `destroy right after that flood`,
  };
  if (typeof options.sandboxed === "string") {
    return [
      skipped({ id: "git.flood.exit", family: "git", title: titles.exit, unit: "ms", better: "lower", reason: options.sandboxed, aim: "≤ 3 s" }),
      skipped({ id: "git.flood.destroy", family: "git", title: titles.destroy, unit: "ms", better: "lower", reason: options.sandboxed, aim: "≤ 10 s" }),
    ];
  }
  const flooded = await gitWorktreeWorkspace(options.sandboxed, "flood");
  const quiet = await gitWorktreeWorkspace(options.sandboxed, "quiet");
  if (typeof flooded === "string" || typeof quiet === "string") throw new Error(typeof flooded === "string" ? flooded : (quiet as string));
  const baselineExit = await exitAfterEnd(options.sandboxed, floodScript(options.refs, false));
  const exit = await exitAfterEnd(flooded, floodScript(options.refs, true));
  await exitAfterEnd(quiet, "git commit -q --allow-empty -m one && echo end");
  const baselineDestroy = await destroyMs(quiet);
  const destroy = await destroyMs(flooded);
  return [
    figure({ id: "git.flood.exit", family: "git", title: titles.exit, unit: "ms", better: "lower", value: exit, baseline: { label: "the same workload, sandboxed, no git of the user's", value: baselineExit }, aim: { text: "≤ 3 s", check: ({ value }) => value <= 3000 } }),
    figure({ id: "git.flood.destroy", family: "git", title: titles.destroy, unit: "ms", better: "lower", value: destroy, baseline: { label: "destroy after one commit", value: baselineDestroy }, aim: { text: "≤ 10 s", check: ({ value }) => value <= 10_000 } }),
  ];
}
