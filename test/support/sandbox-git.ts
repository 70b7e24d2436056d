/**
 * The kit of the sandbox's git tests: a lab's sandboxed options, a shell run in a sandboxed
 * workspace as an agent (with a git identity of its own), git run on the host as the operator
 * runs it, what the runtime logged and where it keeps a workspace's commits, and the end of a
 * test that left a private git dir unreadable.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { PATH, envelope } from "../../kit/envelope.ts";
import type { Lab } from "../../kit/scratch.ts";
import { startExec, type ExecResult } from "./daemon.ts";
import { GIT_TEST_ENV } from "./git.ts";
import { destroyed, op } from "./operation.ts";
import { runtimeLogPath } from "./store.ts";

/** The git identity an agent commits with inside the sandbox. */
export const AGENT_IDENTITY = { GIT_AUTHOR_NAME: "Agent", GIT_AUTHOR_EMAIL: "agent@example.invalid", GIT_COMMITTER_NAME: "Agent", GIT_COMMITTER_EMAIL: "agent@example.invalid" };

/** The helpers bound to the lab of the running test (`lab()` is read at each call: a new lab per test). */
export function sandboxGitKit(lab: () => Lab) {
  /** The lab's options with the sandbox on, and `extra`. */
  const sandboxed = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ ...lab().options, isolation: "sandbox", ...extra });
  /** `script` run by /bin/sh in `workspaceId`, stdin closed. */
  const sh = async (workspaceId: string, script: string, options = sandboxed()): Promise<ExecResult> => {
    const handle = startExec(workspaceId, envelope(["/bin/sh", "-c", script], { options, env: { PATH, ...AGENT_IDENTITY } }));
    handle.closeStdin();
    return handle.done;
  };
  /** The runtime log's lines of `event` (none before the log exists). */
  const logged = (event: string): Record<string, unknown>[] => {
    const path = runtimeLogPath(lab().home);
    if (!existsSync(path)) return [];
    return readFileSync(path, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.event === event);
  };
  /**
   * The end of a test whose workload left its private git dir unreadable on purpose: destroy
   * stops unfinished, keeping the dir (its commits could not be brought out) and naming it;
   * once they are given up as its message says (rm -rf the dir), destroy finishes.
   */
  const givenUp = async (workspaceId: string, options = sandboxed()): Promise<void> => {
    const kept = await op("destroy", workspaceId, { options });
    const dir = /or give them up with rm -rf (\S+) and destroy again/.exec(kept.stderr)?.[1];
    if (kept.code === 0 || dir === undefined) throw new Error(`expected destroy to stop unfinished and name the private git dir it kept; got exit ${kept.code}: ${kept.stderr}`);
    rmSync(dir, { recursive: true, force: true });
    await destroyed(workspaceId, options);
  };
  return { sandboxed, sh, logged, givenUp };
}

/** git as the operator runs it by hand: its exit status is not the point, what it runs is. */
export function hostGit(cwd: string, ...args: string[]): void {
  Bun.spawnSync({ cmd: ["git", ...args], cwd, env: { ...process.env, ...GIT_TEST_ENV }, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
}

/** Where the runtime keeps `ref` of workspace `workspaceId`'s private git dir in the user's repository. */
export function workspaceRef(workspaceId: string, ref: string): string {
  return `refs/paseo-host-runtime/workspaces/${new Bun.CryptoHasher("sha256").update(workspaceId).digest("hex").slice(0, 32)}/${ref}`;
}
