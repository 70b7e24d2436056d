/**
 * The one test that lets the runtime find the hierarchy itself (no options.cgroupRoot): it
 * uses this process's own cgroup (on this machine the hybrid host's /sys/fs/cgroup/unified),
 * and destroy removes every cgroup it made there, the home's too.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { directoryOf, mountOf, ownCgroupDir } from "../../src/platform/cgroup.ts";
import { homeCgroupOf } from "../../src/containment/resolve.ts";
import { request, runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { removeCgroupTree } from "../../kit/cgroup.ts";
import { envelope, PATH } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { withoutCgroups } from "../support/platform.ts";

const dir = tempDir("phr-autodetect-");
const home = join(dir.path, "home");
let homeCgroup: string | null = null;
afterAll(() => {
  // Whatever happened, nothing of this test stays in the real hierarchy.
  if (homeCgroup && existsSync(homeCgroup)) removeCgroupTree(homeCgroup);
  dir.cleanup();
});

test.skipIf(withoutCgroups("containment/autodetect.test.ts"))("without cgroupRoot, executions run under this process's own cgroup; destroy removes every cgroup made", async () => {
  const own = ownCgroupDir()!;
  const project = join(dir.path, "project");
  mkdirSync(project);
  const options = { stateDirectory: home };
  const input = { workspaceId: "auto", project: { projectId: "p", source: { kind: "host-directory", path: project } }, placement: { kind: "existing" } };
  const created = await runBinary(["create", "--workspace-id", "auto"], { stdin: request(options, { input }) });
  expect(created.code, created.stderr).toBe(0);
  homeCgroup = homeCgroupOf(own, home);

  const doctor = JSON.parse((await runBinary(["doctor", "--home", home, "--json"])).stdout);
  const check = doctor.checks.find((c: { name: string }) => c.name === "containment");
  expect(check.status).toBe("ok");
  expect(check.detail).toContain(`under ${homeCgroup} (root ${own}, autodetected from /proc/self/cgroup`);

  const handle = startExec("auto", envelope(["cat", "/proc/self/cgroup"], { options, env: { PATH } }));
  handle.closeStdin();
  const result = await handle.done;
  expect(result.code).toBe(0);
  const line = result.stdout.toString().split("\n").find((entry) => entry.startsWith("0::"))!;
  expect(directoryOf(mountOf(own)!, line.slice(3))).toMatch(new RegExp(`^${homeCgroup}/w-[0-9a-f]{32}/e-[0-9a-f]{32}$`));
  // The execution's cgroup went with it; the workspace's stays until destroy.
  expect(readdirSync(homeCgroup, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)).toEqual([expect.stringMatching(/^w-/)]);

  const destroyed = await runBinary(["destroy", "--workspace-id", "auto"], { stdin: request(options) });
  expect(destroyed.code, destroyed.stderr).toBe(0);
  expect(existsSync(homeCgroup)).toBe(false);
});
