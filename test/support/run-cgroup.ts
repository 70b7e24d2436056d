/**
 * Preloaded by `bun test` (bunfig.toml): the test run moves itself into a cgroup of its own,
 * so every runtime the tests start, whatever options it gets, places its cgroups beneath it
 * (autodetection uses the process's own cgroup). After the last test the run moves back, ends
 * whatever is still inside (only processes the tests started) and removes the whole tree: a
 * test that forgets a destroy can never leave a cgroup on the machine. A run that was killed
 * before it could clean up is cleaned up by the next one.
 */
import { afterAll } from "bun:test";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ownCgroupDir } from "../../src/platform/cgroup.ts";
import { CGROUP_UNAVAILABLE, removeCgroupTree } from "../../kit/cgroup.ts";
import { skipBecause } from "./platform.ts";

const PREFIX = "phr-run-";
/** testCgroupRoot()'s names (phr-test-<pid>-…), left at the top by a bench or script killed outside a test run. */
const STALE = /^(?:phr-run-(\d+)|phr-test-(\d+)-.+)$/;

/** Cgroups of earlier test runs, benches and scripts whose process is gone. */
function removeStaleRuns(parent: string): void {
  for (const name of readdirSync(parent)) {
    const match = STALE.exec(name);
    if (!match) continue;
    const pid = Number(match[1] ?? match[2]);
    if (pid !== process.pid && !existsSync(`/proc/${pid}`)) removeCgroupTree(join(parent, name));
  }
}

function enterRunCgroup(): void {
  if (skipBecause("the test run's own cgroup, and every test that needs cgroup v2", CGROUP_UNAVAILABLE)) return;
  const parent = ownCgroupDir()!;
  removeStaleRuns(parent);
  const run = join(parent, `${PREFIX}${process.pid}`);
  try {
    mkdirSync(run);
    writeFileSync(join(run, "cgroup.procs"), String(process.pid));
  } catch (error) {
    console.error(`the test run stays in ${parent}: it cannot have a cgroup of its own (${(error as Error).message})`);
    return;
  }
  afterAll(() => {
    writeFileSync(join(parent, "cgroup.procs"), String(process.pid));
    removeCgroupTree(run);
  });
}

enterRunCgroup();
