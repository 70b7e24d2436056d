/**
 * "fd 4 is authoritative even when the store is not" (issue 13): with the runtime home on a
 * 1 MiB tmpfs that fills up while the workload runs, the wrapper still sends eof and exit with
 * the real status and mirrors it; the record it could not finish is finished by the next exec
 * of the workspace from what the kernel says, and said in the runtime log. Nothing is killed
 * on that basis: an execution whose wrapper died while its workload runs is left to `signal`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { readProcess } from "../../src/platform/process.ts";
import { request, runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { testCgroupRoot, type TestCgroupRoot } from "../../kit/cgroup.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { isLinux } from "../../src/platform/os.ts";
import { executionRow, runtimeLogLines } from "../support/store.ts";
import { skipBecause } from "../support/platform.ts";

const dir = tempDir("phr-full-");
const home = join(dir.path, "home");
mkdirSync(home, { mode: 0o700 });

/** Why a tmpfs cannot be mounted here, or null once it is. */
const UNMOUNTABLE: string | null = (() => {
  if (!isLinux) return "tmpfs mounts are a Linux test";
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", home], { stderr: "pipe" });
  return mounted.exitCode === 0 ? null : `cannot mount a tmpfs (${mounted.stderr.toString().trim() || `exit ${mounted.exitCode}`})`;
})();

let cgroups: TestCgroupRoot | null = null;

afterAll(() => {
  cgroups?.cleanup();
  if (!UNMOUNTABLE) Bun.spawnSync(["umount", home]);
  dir.cleanup();
});

/** Fills the tmpfs up to its last block. */
function fillDisk(): string {
  const path = join(home, "fill");
  const fd = openSync(path, "w");
  try {
    for (const size of [65536, 4096, 512, 1]) {
      const chunk = Buffer.alloc(size);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

const recordOf = (execId: string) => executionRow(home, execId);
const logLines = () => runtimeLogLines(home);

describe.skipIf(skipBecause("exec/disk-full.test.ts, a full state disk", UNMOUNTABLE))("a full state disk", () => {
  const options: Record<string, unknown> = { stateDirectory: home };
  const workspaceId = `full-${process.pid}`;

  beforeAll(async () => {
    cgroups = testCgroupRoot();
    if (cgroups) options.cgroupRoot = cgroups.path;
    const project = join(dir.path, "project");
    mkdirSync(project);
    const input = { workspaceId, project: { projectId: "p", source: { kind: "host-directory", path: project } }, placement: { kind: "existing" } };
    const created = await runBinary(["create", "--workspace-id", workspaceId], { stdin: request(options, { input }) });
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
  });

  for (const containment of ["auto", "process-group"] as const) {
    test(`${containment}: a workload that ends while the disk is full still gets eof and its real exit, mirrored; the next exec finishes its record`, async () => {
      const env = envelope(["/bin/sh", "-c", "read line; exit 7"], { options: { ...options, containment }, env: { PATH } });
      const handle = startExec(workspaceId, env);
      await handle.waitEvent("started");
      const fill = fillDisk();
      try {
        handle.write("go\n");
        handle.closeStdin();
        const result = await handle.done;
        expect(result.violation).toBeNull();
        expect(result.events.map((event) => event.type)).toEqual(["started", "eof", "exit"]);
        expect(result.events[2]).toEqual({ type: "exit", protocolVersion: 1, code: 7, signal: null });
        expect(result.code).toBe(7);
        // The store really refused: the record is still open.
        expect(recordOf(env.execId as string)?.finished_at).toBeNull();
      } finally {
        rmSync(fill);
      }
      const next = startExec(workspaceId, envelope(["true"], { options: { ...options, containment }, env: { PATH } }));
      next.closeStdin();
      expect((await next.done).code).toBe(0);
      expect(recordOf(env.execId as string)?.finished_at).not.toBeNull();
      const settled = logLines().find((line) => line.event === "settled" && line.execId === env.execId);
      expect(settled?.message).toContain("recorded as finished, outcome unknown");
      const shown = await runBinary(["logs", "--home", home, "--exec-id", env.execId as string]);
      expect(shown.stdout).toContain("finished the record of an ended execution");
    });
  }

  test("an execution whose wrapper died while its workload runs is not finished nor killed by the next exec", async () => {
    const env = envelope(["sleep", "30"], { options: { ...options, containment: "process-group" }, env: { PATH } });
    const handle = startExec(workspaceId, env);
    await handle.waitEvent("started");
    const pid = recordOf(env.execId as string)!.pid;
    handle.child.kill("SIGKILL");
    await handle.exited;
    const next = startExec(workspaceId, envelope(["true"], { options, env: { PATH } }));
    next.closeStdin();
    expect((await next.done).code).toBe(0);
    expect(readProcess(pid)?.state).not.toBe("Z");
    expect(recordOf(env.execId as string)?.finished_at).toBeNull();
    const signalled = await runBinary(["signal", "--workspace-id", workspaceId, "--exec-id", env.execId as string, "--signal", "SIGKILL"], { stdin: request(options) });
    expect(signalled.code).toBe(0);
    // Gone, or a zombie the init process has not reaped yet.
    expect(readProcess(pid)?.state ?? "Z").toBe("Z");
  });
});
