/**
 * The test kit's scratch directories: a temp dir removed by its cleanup, and the kind that
 * runs the runtime (with a private cgroup root for its executions). Every test's throwaway
 * files live in one of them.
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { testCgroupRoot } from "./cgroup.ts";

export interface Scratch {
  path: string;
  cleanup: () => void;
}

/** A temp dir removed by the returned cleanup. */
export function tempDir(prefix = "phr-test-"): Scratch {
  const path = mkdtempSync(`${tmpdir()}/${prefix}`);
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * A temp dir (its real path) to run the runtime in, with a private cgroup root for its
 * executions (null without cgroup v2); cleanup removes both, ending what ran in the cgroups.
 */
export function runtimeScratch(prefix: string): Scratch & { cgroupRoot: string | null } {
  const dir = tempDir(prefix);
  const cgroups = testCgroupRoot();
  const cleanup = () => {
    cgroups?.cleanup();
    dir.cleanup();
  };
  return { path: realpathSync(dir.path), cgroupRoot: cgroups?.path ?? null, cleanup };
}
