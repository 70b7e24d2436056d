/**
 * What cannot be contained is refused before anything runs: `containment: "cgroup"` without a
 * usable hierarchy (create, resume and exec refuse, saying what is missing and how to fix it),
 * and limits whose controller is not delegated. Where the controllers exist, a pidsMax fork
 * bomb is contained and memoryMax is enforced; elsewhere those tests say why they skip.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cgroupV1Controllers } from "../../src/platform/cgroup.ts";
import { BIN, request, runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { CGROUP_UNAVAILABLE, testCgroupRoot, type TestCgroupRoot } from "../../kit/cgroup.ts";
import { envelope, PATH } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { lifecycle } from "../support/operation.ts";
import { tag } from "../support/containment.ts";
import { processesWith } from "../support/procs.ts";
import { linuxOnly, skipBecause, withoutCgroups, withoutRoot } from "../support/platform.ts";
import { missingTools } from "../support/tools.ts";

/** Set where the tests marked with it cannot run: they need Linux (cgroup v2 and its mounts). */
const NO_CGROUP_MESSAGES = linuxOnly("containment/refusal.test.ts, refusals of unusable cgroup roots", "cgroup v2 and its mounts");

const cleanups: (() => void)[] = [];
afterAll(() => cleanups.splice(0).forEach((cleanup) => cleanup()));

const notCgroup = tempDir("phr-not-a-cgroup-");
cleanups.push(notCgroup.cleanup);

/** A workspace plus a request body for `create` of another one in the same home. */
function createBody(ws: ReadyWorkspace, id: string, options: Record<string, unknown>) {
  const project = join(ws.root, "..", `project-${id}`);
  mkdirSync(project, { recursive: true });
  const input = { workspaceId: id, project: { projectId: "p", source: { kind: "host-directory", path: project } }, placement: { kind: "existing" } };
  return request({ ...ws.options, ...options }, { input });
}

describe.skipIf(NO_CGROUP_MESSAGES)('containment: "cgroup" without a usable hierarchy', () => {
  let ws: ReadyWorkspace;
  beforeAll(async () => {
    ws = await readyWorkspace("refuse");
    cleanups.push(ws.cleanup);
  });

  const unusable: [string, string, RegExp][] = [
    ["a plain directory", notCgroup.path, /is not a cgroup directory; fix: point options\.cgroupRoot at a delegated directory under /],
    ["a directory that does not exist", join(notCgroup.path, "missing"), /is not a cgroup directory/],
    ...(existsSync("/sys/fs/cgroup/memory/cgroup.procs") ? ([["a cgroup v1 directory", "/sys/fs/cgroup/memory", /\/sys\/fs\/cgroup\/memory is a cgroup v1 directory/]] as [string, string, RegExp][]) : []),
  ];

  for (const [what, root, message] of unusable) {
    test(`${what}: create refuses, records nothing`, async () => {
      const id = `w-${tag()}`;
      const result = await runBinary(["create", "--workspace-id", id], { stdin: createBody(ws, id, { containment: "cgroup", cgroupRoot: root }) });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain('options.containment is "cgroup" but');
      expect(result.stderr).toMatch(message);
      const inspected = await runBinary(["inspect", "--workspace-id", id], { stdin: request(ws.options) });
      expect(JSON.parse(inspected.stdout).inspection).toEqual({ status: "missing" });
    });

    test(`${what}: exec refuses before anything runs, and its identity is recorded as finished`, async () => {
      const marker = join(ws.root, `ran-${tag()}`);
      const env = envelope(["touch", marker], { options: { ...ws.options, containment: "cgroup", cgroupRoot: root }, env: { PATH } });
      const handle = startExec(ws.id, env);
      handle.closeStdin();
      const result = await handle.done;
      expect(result.code).toBe(1);
      expect(result.events).toEqual([]);
      expect(result.stderr).toMatch(/cannot launch: options\.containment is "cgroup" but/);
      expect(result.stderr).toMatch(message);
      expect(existsSync(marker)).toBe(false);
      // The daemon's cleanup after a refusal: "already clean", not "not ready".
      const signalled = await runBinary(["signal", "--workspace-id", ws.id, "--exec-id", env.execId as string, "--signal", "SIGKILL"], { stdin: request(ws.options) });
      expect(signalled.stderr).toBe("");
      expect(signalled.code).toBe(0);
    });
  }

  test("resume refuses and the workspace stays paused", async () => {
    expect((await lifecycle(ws, "pause")).code).toBe(0);
    const result = await lifecycle(ws, "resume", { containment: "cgroup", cgroupRoot: notCgroup.path });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('options.containment is "cgroup" but');
    expect(JSON.parse((await lifecycle(ws, "inspect")).stdout).inspection.status).toBe("paused");
    expect((await lifecycle(ws, "resume")).code).toBe(0);
  });

  test('"auto" with the same root falls back to process groups, and doctor says so', async () => {
    const options = { ...ws.options, cgroupRoot: notCgroup.path };
    const handle = startExec(ws.id, envelope(["cat", "/proc/self/cgroup"], { options, env: { PATH } }));
    handle.closeStdin();
    const result = await handle.done;
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).not.toContain("paseo-");
    const doctor = await runBinary(["doctor", "--home", ws.home, "--options-json", JSON.stringify({ cgroupRoot: notCgroup.path }), "--json"]);
    const check = JSON.parse(doctor.stdout).checks.find((c: { name: string }) => c.name === "containment");
    expect(check.status).toBe("warn");
    expect(check.detail).toMatch(/^process groups: options\.cgroupRoot .* is not a cgroup directory/);
  });

  const unwritable = "containment/refusal.test.ts, a cgroup the daemon's user may not write";
  test.skipIf(withoutCgroups(unwritable) || withoutRoot(unwritable, "the daemon's user is nobody, through setpriv") || missingTools(unwritable, ["setpriv"]).length > 0)("a cgroup the daemon's user may not write: refused, naming the user", async () => {
    const root = testCgroupRoot()!;
    cleanups.push(root.cleanup);
    const home = tempDir("phr-nobody-");
    cleanups.push(home.cleanup);
    chownSync(home.path, 65534, 65534);
    const result = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BIN, "doctor", "--home", join(home.path, "h"), "--options-json", JSON.stringify({ containment: "cgroup", cgroupRoot: root.path }), "--json"], {
      env: { PATH: "/usr/bin:/bin", HOME: home.path },
    });
    const check = JSON.parse(result.stdout.toString()).checks.find((c: { name: string }) => c.name === "containment");
    expect(check.status).toBe("fail");
    expect(check.detail).toContain(`cgroup ${root.path} is not writable by uid 65534 (not delegated to this user)`);
    expect(check.hint).toContain("Delegate=yes");
  });
});

describe("limits", () => {
  let root: TestCgroupRoot | null;
  let ws: ReadyWorkspace;
  beforeAll(async () => {
    ws = await readyWorkspace("limits");
    cleanups.push(ws.cleanup);
    root = ws.cgroupRoot ? { path: ws.cgroupRoot, cleanup: () => {} } : null;
  });

  const limits: [string, string | number, string][] = [
    ["memoryMax", "64M", "memory"],
    ["pidsMax", 32, "pids"],
    ["cpuMax", "50000 100000", "cpu"],
  ];

  for (const [option, value, controller] of limits) {
    const available = !CGROUP_UNAVAILABLE && testCgroupRootHas(controller);
    const skip = skipBecause(`containment/refusal.test.ts, ${option} refused`, available ? `the ${controller} controller is available here, so nothing refuses it` : null);
    test.skipIf(skip)(`${option} is refused with the reason when the ${controller} controller is not available; nothing is created`, async () => {
      const id = `w-${tag()}`;
      const result = await runBinary(["create", "--workspace-id", id], { stdin: createBody(ws, id, { [option]: value }) });
      expect(result.code).toBe(1);
      if (root) {
        expect(result.stderr).toContain(`options.${option} needs the ${controller} controller, which is not available in ${root.path}`);
        if (cgroupV1Controllers().includes(controller)) expect(result.stderr).toContain(`the ${controller} controller is bound to cgroup v1`);
      } else {
        expect(result.stderr).toContain(`options.${option} needs cgroup containment`);
      }
      expect(result.stderr).toContain("fix:");
      expect(JSON.parse((await runBinary(["inspect", "--workspace-id", id], { stdin: request(ws.options) })).stdout).inspection).toEqual({ status: "missing" });
      // An exec asking for it is refused too (its workspace cgroup would lack the limit).
      const refused = startExec(ws.id, envelope(["true"], { options: { ...ws.options, [option]: value }, env: { PATH } }));
      refused.closeStdin();
      const outcome = await refused.done;
      expect(outcome.events).toEqual([]);
      expect(outcome.stderr).toContain(`options.${option} needs`);
    });
  }

  test("under process-group containment any limit is refused", async () => {
    const id = `w-${tag()}`;
    const result = await runBinary(["create", "--workspace-id", id], { stdin: createBody(ws, id, { containment: "process-group", pidsMax: 10 }) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('options.pidsMax needs cgroup containment, but process groups are in force: options.containment is "process-group"');
  });

  const pidsReason = !CGROUP_UNAVAILABLE && testCgroupRootHas("pids") ? null : `the pids controller is not available in this host's cgroup v2 hierarchy${cgroupV1Controllers().includes("pids") ? " (it is bound to cgroup v1 here)" : ""}`;
  const memoryReason = !CGROUP_UNAVAILABLE && testCgroupRootHas("memory") ? null : `the memory controller is not available in this host's cgroup v2 hierarchy${cgroupV1Controllers().includes("memory") ? " (it is bound to cgroup v1 here)" : ""}`;

  test.skipIf(skipBecause("containment/refusal.test.ts, pidsMax enforced", pidsReason))("pidsMax contains a fork bomb; the workspace's pids.current never passes it", async () => {
    const id = `bomb-${tag()}`;
    const options = { ...ws.options, pidsMax: 16 };
    const made = await runBinary(["create", "--workspace-id", id], { stdin: createBody(ws, id, { pidsMax: 16 }) });
    expect(made.code, made.stderr).toBe(0);
    const marker = tag();
    const handle = startExec(id, envelope(["/bin/sh", "-c", `for i in $(seq 200); do sleep ${marker} & done 2>/dev/null; wait`], { options, env: { PATH } }));
    handle.closeStdin();
    await handle.waitEvent("started");
    await Bun.sleep(500);
    expect(processesWith(`sleep\0${marker}`).length).toBeLessThan(16);
    expect((await runBinary(["destroy", "--workspace-id", id], { stdin: request(options) })).code).toBe(0);
    await handle.done;
    expect(processesWith(`sleep\0${marker}`)).toEqual([]);
  });

  test.skipIf(skipBecause("containment/refusal.test.ts, memoryMax enforced", memoryReason))("memoryMax is enforced: a workload allocating past it is killed", async () => {
    const id = `mem-${tag()}`;
    const options = { ...ws.options, memoryMax: "32M" };
    const made = await runBinary(["create", "--workspace-id", id], { stdin: createBody(ws, id, { memoryMax: "32M" }) });
    expect(made.code, made.stderr).toBe(0);
    const handle = startExec(id, envelope(["/bin/sh", "-c", 'x=$(head -c 200000000 /dev/zero | tr "\\0" a); echo ${#x}'], { options, env: { PATH } }));
    handle.closeStdin();
    const result = await handle.done;
    expect(result.stdout.toString()).not.toContain("200000000");
    expect(result.events.at(-1)).toMatchObject({ type: "exit" });
    expect((await runBinary(["destroy", "--workspace-id", id], { stdin: request(options) })).code).toBe(0);
  });
});

/** Whether a fresh cgroup under this process's own would have `controller`. */
function testCgroupRootHas(controller: string): boolean {
  const root = testCgroupRoot();
  if (!root) return false;
  try {
    return readFileSync(join(root.path, "cgroup.controllers"), "utf8").split(/\s+/).includes(controller);
  } finally {
    root.cleanup();
  }
}
