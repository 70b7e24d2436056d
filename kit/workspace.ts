/** A ready workspace for exec tests: a temp runtime home plus an adopted temp directory. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { laterRequest, request, runBinary } from "./binary.ts";
import { lab } from "./scratch.ts";
import { INSTANCE_ID } from "./envelope.ts";

export interface ReadyWorkspace {
  id: string;
  home: string;
  /** The adopted directory (the workspace root). */
  root: string;
  /** Options to put in envelopes and lifecycle requests (a private cgroupRoot where cgroups work). */
  options: { stateDirectory: string; cgroupRoot?: string; containment?: string } & Record<string, unknown>;
  /** The private cgroup root, or null without cgroup v2. */
  cgroupRoot: string | null;
  cleanup: () => void;
}

let counter = 0;

/**
 * Creates a workspace through the compiled binary's `create` (a directory source placed
 * `existing`), the way the daemon of `dialect` does (the later one as INSTANCE_ID). Envelopes
 * and lifecycle requests must carry `options` so exec finds the same home and cgroup root;
 * `extra` options (containment) go into them too.
 */
export async function readyWorkspace(prefix = "ws", dialect: "seed" | "later" = "seed", extra: { containment?: string } & Record<string, unknown> = {}): Promise<ReadyWorkspace> {
  const world = lab("phr-ws-");
  const root = join(world.dir, "project");
  mkdirSync(root);
  const id = `${prefix}-${process.pid}-${++counter}`;
  const options = { ...world.options, ...extra };
  const kind = dialect === "seed" ? "host-directory" : "directory";
  const input = { workspaceId: id, project: { projectId: "p", source: { kind, path: root } }, placement: { kind: "existing" } };
  const result = await runBinary(["create", "--workspace-id", id], {
    stdin: dialect === "seed" ? request(options, { input }) : laterRequest(INSTANCE_ID, options, { input }),
    env: { PASEO_HOST_RUNTIME_HOME: world.home },
  });
  if (result.code !== 0) {
    world.cleanup();
    throw new Error(`create failed (${result.code}): ${result.stderr}`);
  }
  return { id, home: world.home, root, options, cgroupRoot: world.cgroupRoot, cleanup: world.cleanup };
}
