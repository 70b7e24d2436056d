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
import { CGROUP_UNAVAILABLE, removeCgroupTree } from "./cgroup.ts";

const PREFIX = "phr-run-";

/** Cgroups of earlier test runs whose process is gone. */
function removeStaleRuns(parent: string): void {
  for (const name of readdirSync(parent)) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number(name.slice(PREFIX.length));
    if (Number.isInteger(pid) && pid !== process.pid && !existsSync(`/proc/${pid}`)) removeCgroupTree(join(parent, name));
  }
}

function enterRunCgroup(): void {
  if (CGROUP_UNAVAILABLE) return;
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
