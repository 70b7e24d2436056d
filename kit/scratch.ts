/**
 * Scratch directories: a temp dir removed by its cleanup, and a lab, the private world the
 * runtime runs in (a runtime home and a private cgroup root for its executions). Every test's
 * throwaway files live in one of them.
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

/** A private world to run the runtime in; cleanup ends what ran in its cgroups and removes everything. */
export interface Lab {
  /** The temp dir (its real path). */
  dir: string;
  /** The runtime home inside it, `<dir>/home` (the runtime makes it). */
  home: string;
  /** A private cgroup root for its executions, or null without cgroup v2. */
  cgroupRoot: string | null;
  /** The options selecting both, as requests and envelopes carry them. */
  options: { stateDirectory: string; cgroupRoot?: string } & Record<string, unknown>;
  cleanup(): void;
}

export function lab(prefix = "phr-lab-"): Lab {
  const scratch = tempDir(prefix);
  const cgroups = testCgroupRoot();
  const dir = realpathSync(scratch.path);
  const home = join(dir, "home");
  const cleanup = () => {
    cgroups?.cleanup();
    scratch.cleanup();
  };
  return { dir, home, cgroupRoot: cgroups?.path ?? null, options: { stateDirectory: home, ...(cgroups ? { cgroupRoot: cgroups.path } : {}) }, cleanup };
}
