/** Shared by the operator command tests: a sandbox with its own runtime home and a git repo. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { BIN, runBinary, type RunOptions, type RunResult } from "../../kit/binary.ts";
import { runtimeScratch } from "../../kit/scratch.ts";
import { removeCgroupTree } from "../../kit/cgroup.ts";
import { ownCgroupDir } from "../../src/platform/cgroup.ts";
import { homeCgroupOf } from "../../src/workspace/containment.ts";
import { oneCommitRepo } from "../support/git.ts";

export { BIN };

export interface Sandbox {
  path: string;
  /** The runtime home (`--home`). */
  home: string;
  /** HOME / XDG_STATE_HOME / PASEO_HOME pointed inside the sandbox, so no fallback reaches the real ones. */
  env: Record<string, string>;
  /** `--options-json` naming a private cgroup root, for commands that run executions ([] without cgroup v2). */
  cgroupArgs: string[];
  /** That private cgroup root, or null. */
  cgroupRoot: string | null;
  cleanup: () => void;
}

export function sandbox(): Sandbox {
  const { path, cgroupRoot, cleanup } = runtimeScratch("phr-op-");
  mkdirSync(join(path, "user-home"));
  return {
    path,
    home: join(path, "runtime-home"),
    // A UTF-8 locale (doctor's ✓ marks) and no NO_COLOR/PASEO_HOME from the caller's environment.
    env: {
      HOME: join(path, "user-home"),
      XDG_STATE_HOME: join(path, "user-home", "state"),
      PASEO_HOST_RUNTIME_HOME: join(path, "unused-home"),
      PASEO_HOME: join(path, "user-home", ".paseo"),
      LC_ALL: "C.UTF-8",
      NO_COLOR: "",
    },
    cgroupArgs: cgroupRoot ? ["--options-json", JSON.stringify({ cgroupRoot })] : [],
    cgroupRoot,
    cleanup: () => {
      // A command run without cgroupArgs found the real hierarchy: remove what it made there for this home.
      const own = ownCgroupDir();
      if (own) removeCgroupTree(homeCgroupOf(own, join(path, "runtime-home")));
      cleanup();
    },
  };
}

/** Runs an operator command with the sandbox's environment. */
export function runIn(box: Sandbox, args: string[], options: RunOptions = {}): Promise<RunResult> {
  return runBinary(args, { ...options, env: { ...box.env, ...options.env } });
}

/** A git repository with one commit on `main` (file `hello.txt`), inside the sandbox. */
export function gitRepo(box: Sandbox, name = "repo"): string {
  return oneCommitRepo(join(box.path, name));
}

