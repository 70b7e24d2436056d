/**
 * "Whatever happens to the store after `started`, the exit is not lost" (issue 23). The runtime
 * home is a loop-mounted ext4 image of the test's own: its store files made immutable while the
 * workload runs (ext4 then refuses writes through the wrapper's shared mappings with SIGBUS),
 * or the filesystem forced read-only the way the kernel does on an error (errors=remount-ro).
 * The workload's exit still reaches fd 4 and the wrapper mirrors it; the store's failure is
 * reported (runtime log; stderr where the wrapper still has one, PTY mode), and the next
 * operation that can write finishes the record.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { isLinux } from "../../src/platform/os.ts";
import { request, runBinary } from "../../kit/binary.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { tempDir } from "../../kit/scratch.ts";
import { executionRow, runtimeLogLines, storePath } from "../support/store.ts";
import { skipBecause } from "../support/platform.ts";

const dir = tempDir("phr-broken-");
const image = join(dir.path, "home.ext4");
const mountPoint = join(dir.path, "mnt");
const home = join(mountPoint, "home");
const project = join(dir.path, "project");
let mounted = false;

/** The system tools this needs, found also where Debian keeps them for root (/usr/sbin). */
const TOOLS_PATH = `${process.env.PATH ?? ""}:/usr/sbin:/sbin`;
const tool = (name: string) => Bun.which(name, { PATH: TOOLS_PATH });

function run(argv: string[]): string | null {
  const result = Bun.spawnSync([tool(argv[0]!) ?? argv[0]!, ...argv.slice(1)], { stderr: "pipe", stdout: "pipe" });
  return result.exitCode === 0 ? null : `${argv.join(" ")}: ${result.stderr.toString().trim() || `exit ${result.exitCode}`}`;
}

function mountImage(): string | null {
  const problem = run(["mount", "-o", "loop,errors=remount-ro", image, mountPoint]);
  mounted ||= problem === null;
  return problem;
}

/** Why a loop-mounted ext4 home cannot be made here, or null once it is mounted. */
const UNMOUNTABLE: string | null = (() => {
  if (!isLinux) return "loop-mounted ext4 is a Linux test";
  if (process.getuid?.() !== 0) return "mounting a loop device and chattr +i need root";
  for (const name of ["mkfs.ext4", "e2fsck", "chattr"]) if (!tool(name)) return `${name} is not installed (e2fsprogs)`;
  mkdirSync(mountPoint);
  mkdirSync(project);
  writeFileSync(image, "");
  return run(["truncate", "-s", "64M", image]) ?? run(["mkfs.ext4", "-q", "-F", image]) ?? mountImage();
})();

afterAll(() => {
  if (mounted) {
    Bun.spawnSync(["chattr", "-R", "-i", home]);
    Bun.spawnSync(["umount", mountPoint]);
  }
  dir.cleanup();
});

/** Runs `fn` with every file of the store immutable (chattr +i), made mutable again whatever happens. */
async function whileImmutable<T>(fn: () => Promise<T>): Promise<T> {
  const files = readdirSync(home).filter((name) => name.startsWith("state.sqlite")).map((name) => join(home, name));
  expect(run(["chattr", "+i", ...files])).toBeNull();
  try {
    return await fn();
  } finally {
    expect(run(["chattr", "-i", ...files])).toBeNull();
  }
}

const recordOf = (execId: string) => executionRow(home, execId);
const logLines = () => runtimeLogLines(home);

/** The loop device behind the mount, for ext4's sysfs knobs. */
function loopDevice(): string {
  const line = readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .find((entry) => entry.split(" ")[1] === mountPoint)!;
  return basename(line.split(" ")[0]!);
}

/** An exec of `true` in the workspace: the next operation that writes the store. */
async function nextExec(options: Record<string, unknown>): Promise<void> {
  const next = startExec(workspaceId, envelope(["true"], { options, env: { PATH } }));
  next.closeStdin();
  const done = await next.done;
  expect(done.code, done.stderr).toBe(0);
}

const workspaceId = `broken-${process.pid}`;

describe.skipIf(skipBecause("exec/store-broken.test.ts, a store that breaks after started", UNMOUNTABLE))("a store that breaks after started", () => {
  const options: Record<string, unknown> = { stateDirectory: home };

  beforeAll(async () => {
    mkdirSync(home, { mode: 0o700 });
    const input = { workspaceId, project: { projectId: "p", source: { kind: "host-directory", path: project } }, placement: { kind: "existing" } };
    const created = await runBinary(["create", "--workspace-id", workspaceId], { stdin: request(options, { input }) });
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
  });

  for (const containment of ["auto", "process-group"] as const) {
    test(`${containment}: store files made immutable mid-exec: eof and the real exit on fd 4, mirrored; the next exec finishes the record`, async () => {
      const env = envelope(["/bin/sh", "-c", "read line; exit 7"], { options: { ...options, containment }, env: { PATH } });
      const handle = startExec(workspaceId, env);
      await handle.waitEvent("started");
      const result = await whileImmutable(async () => {
        handle.write("go\n");
        handle.closeStdin();
        return await handle.done;
      });
      expect(result.violation).toBeNull();
      expect(result.events.map((event) => event.type)).toEqual(["started", "eof", "exit"]);
      expect(result.events[2]).toEqual({ type: "exit", protocolVersion: 1, code: 7, signal: null });
      expect(result.signal).toBeNull();
      expect(result.code).toBe(7);
      const reported = logLines().find((line) => line.execId === env.execId && line.event === "diagnostic");
      expect(reported?.message).toContain("cannot record the end of execution");
      expect(reported?.message).toContain("(EPERM: immutable?");
      expect(recordOf(env.execId as string)?.finished_at).toBeNull();
      await nextExec(options);
      expect(recordOf(env.execId as string)?.finished_at).not.toBeNull();
      expect(logLines().some((line) => line.event === "settled" && line.execId === env.execId)).toBe(true);
    });
  }

  test("a workload ended by a signal while the store is immutable: exit says the signal and the wrapper dies of it", async () => {
    const env = envelope(["/bin/sh", "-c", "read line; kill -TERM $$"], { options, env: { PATH } });
    const handle = startExec(workspaceId, env);
    await handle.waitEvent("started");
    const result = await whileImmutable(async () => {
      handle.write("go\n");
      handle.closeStdin();
      return await handle.done;
    });
    expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: null, signal: "SIGTERM" });
    expect(result.signal).toBe("SIGTERM");
    await nextExec(options);
    expect(recordOf(env.execId as string)?.finished_at).not.toBeNull();
  });

  test("PTY: the exit reaches fd 4 and the failure is said on the wrapper's stderr too", async () => {
    const env = envelope(["/bin/sh", "-c", "read line; exit 5"], { options, env: { PATH }, stdio: { kind: "pty", cols: 80, rows: 24 } });
    const handle = startExec(workspaceId, env, { keepControls: true });
    await handle.waitEvent("started");
    const result = await whileImmutable(async () => {
      handle.write("go\n");
      await handle.waitEvent("exit");
      handle.closeControls();
      handle.closeStdin();
      return await handle.done;
    });
    expect(result.violation).toBeNull();
    expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: 5, signal: null });
    expect(result.code).toBe(5);
    expect(result.stderr).toContain("cannot record the end of execution");
    expect(result.stderr).not.toContain("panic");
    await nextExec(options);
    expect(recordOf(env.execId as string)?.finished_at).not.toBeNull();
  });

  // Last: it leaves the filesystem read-only until it is checked and mounted again.
  test("the filesystem forced read-only mid-exec: the exit reaches fd 4, mirrored; once it is repaired, reconcile finishes the record", async () => {
    const env = envelope(["/bin/sh", "-c", "read line; exit 9"], { options, env: { PATH } });
    const handle = startExec(workspaceId, env);
    await handle.waitEvent("started");
    // The record so far reached the disk (as writeback does within seconds); then what ext4 does
    // on an I/O error with errors=remount-ro: read-only at once, writers or not.
    expect(run(["sync", "-f", storePath(home)])).toBeNull();
    writeFileSync(`/sys/fs/ext4/${loopDevice()}/trigger_fs_error`, "1");
    handle.write("go\n");
    handle.closeStdin();
    const result = await handle.done;
    expect(result.violation).toBeNull();
    expect(result.events.map((event) => event.type)).toEqual(["started", "eof", "exit"]);
    expect(result.events[2]).toEqual({ type: "exit", protocolVersion: 1, code: 9, signal: null });
    expect(result.code).toBe(9);
    // Nothing can write until the filesystem is checked and mounted again.
    expect(run(["umount", mountPoint])).toBeNull();
    mounted = false;
    run(["e2fsck", "-f", "-y", image]);
    expect(mountImage()).toBeNull();
    expect(existsSync(storePath(home))).toBe(true);
    expect(recordOf(env.execId as string)?.finished_at).toBeNull();
    const reconciled = await runBinary(["reconcile"], { stdin: request(options, { workspaceIds: [workspaceId] }) });
    expect(reconciled.stderr).toBe("");
    expect(reconciled.code).toBe(0);
    expect(recordOf(env.execId as string)?.finished_at).not.toBeNull();
  });
});
