/** The operator commands as a person runs them: a lab with its own user home and environment. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { runBinary, type RunOptions, type RunResult } from "../../kit/binary.ts";
import { removeCgroupTree } from "../../kit/cgroup.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { ownCgroupDir } from "../../src/platform/cgroup.ts";
import { homeCgroupOf } from "../../src/containment/resolve.ts";

/** A lab whose `home` is the runtime home an operator command is given (`--home`). */
export interface Sandbox extends Lab {
  /** HOME / XDG_STATE_HOME / PASEO_HOME pointed inside the sandbox, so no fallback reaches the real ones. */
  env: Record<string, string>;
  /** `--options-json` naming the private cgroup root, for commands that run executions ([] without cgroup v2). */
  cgroupArgs: string[];
}

export function sandbox(): Sandbox {
  const world = lab("phr-op-");
  const { dir } = world;
  mkdirSync(join(dir, "user-home"));
  return {
    ...world,
    // A UTF-8 locale (doctor's ✓ marks) and no NO_COLOR/PASEO_HOME from the caller's environment.
    env: {
      HOME: join(dir, "user-home"),
      XDG_STATE_HOME: join(dir, "user-home", "state"),
      PASEO_HOST_RUNTIME_HOME: join(dir, "unused-home"),
      PASEO_HOME: join(dir, "user-home", ".paseo"),
      LC_ALL: "C.UTF-8",
      NO_COLOR: "",
    },
    cgroupArgs: world.cgroupRoot ? ["--options-json", JSON.stringify({ cgroupRoot: world.cgroupRoot })] : [],
    cleanup: () => {
      // A command run without cgroupArgs found the real hierarchy: remove what it made there for this home.
      const own = ownCgroupDir();
      if (own) removeCgroupTree(homeCgroupOf(own, world.home));
      world.cleanup();
    },
  };
}

/** Runs an operator command with the sandbox's environment. */
export function runIn(box: Sandbox, args: string[], options: RunOptions = {}): Promise<RunResult> {
  return runBinary(args, { ...options, env: { ...box.env, ...options.env } });
}
