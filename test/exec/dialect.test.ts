/**
 * exec in the later dialect, against the compiled binary, driven like that daemon: the spawn
 * envelope carries runtimeInstanceId, purposes carry no payload, the helper comes with env {}
 * and must be found on the workload's (host's) PATH. The fd 3 envelope names its own dialect:
 * a mixed one, one in the workspace's other dialect, or one with a duplicate key launches nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { laterRequest, runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { PATH, INSTANCE_ID, envelope, instanceIdOf, laterEnvelope, resizeFrame, signalFrame } from "../../kit/envelope.ts";
import { startExec, type ExecHandle, type ExecResult } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { MARK } from "../support/procs.ts";
import { killLeftovers } from "../support/pty.ts";
import { linuxOnly } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc). */
const PROC = linuxOnly("exec/dialect.test.ts, leftovers found through /proc after each test", "/proc");

setDefaultTimeout(20_000);

let ws: ReadyWorkspace;
let seedWs: ReadyWorkspace;

beforeAll(async () => {
  ws = await readyWorkspace("later", "later");
  seedWs = await readyWorkspace("seed");
});
afterEach(async () => {
  await killLeftovers();
});
afterAll(() => {
  ws?.cleanup();
  seedWs?.cleanup();
});

const started = { type: "started", protocolVersion: 1 };
const eof = { type: "eof", protocolVersion: 1 };
const exit = (code: number | null, signal: string | null = null) => ({ type: "exit", protocolVersion: 1, code, signal });

function run(fields: Record<string, unknown>, argv: string[], stdin?: string): Promise<ExecResult> {
  const handle = startExec(ws.id, laterEnvelope(argv, { env: { PATH }, options: ws.options, ...fields }));
  if (stdin !== undefined) handle.write(stdin);
  handle.closeStdin();
  return handle.done;
}

/** A PTY exec as the later daemon drives it: fd 3 open, fd 0 and fd 3 closed on `exit`. */
function startPty(argv: string[]): ExecHandle {
  const handle = startExec(
    ws.id,
    laterEnvelope(argv, { env: { PATH, ...MARK }, purpose: { kind: "terminal" }, options: ws.options, stdio: { kind: "pty", rows: 24, cols: 80 } }),
    { keepControls: true },
  );
  void handle.waitEvent("exit").then(() => {
    handle.closeStdin();
    handle.closeControls();
  });
  return handle;
}

describe.skipIf(PROC)("the later daemon's exec", () => {
  test("pipes: argv, cwd, exactly the envelope env, stdin to stdout, the exit code", async () => {
    mkdirSync(join(ws.root, "packages", "app"), { recursive: true });
    const result = await run({ cwd: "packages/app", env: { PATH, ONLY: "this" } }, ["/bin/sh", "-c", 'printf "%s|%s|" "$(pwd)" "$ONLY"; env | sort | tr "\\n" ","; cat; exit 7'], "from-stdin");
    expect(result.violation).toBeNull();
    expect(result.events).toEqual([started, eof, exit(7)] as never);
    expect(result.stdout.toString()).toBe(`${join(ws.root, "packages", "app")}|this|ONLY=this,PATH=${PATH},PWD=${join(ws.root, "packages", "app")},from-stdin`);
    expect(result.code).toBe(7);
  });

  test.each(["agent", "terminal", "git", "discovery", "workspace-script", "setup", "archive"])("purpose %s (no payload) runs", async (kind) => {
    const result = await run({ purpose: { kind } }, ["/bin/true"]);
    expect(result.violation).toBeNull();
    expect(result.events).toEqual([started, eof, exit(0)] as never);
  });

  test("PTY: a terminal of the envelope's size, resize acknowledged before input, SIGTERM by frame", async () => {
    const handle = startPty(["/bin/sh", "-c", "stty size; read line; stty size; sleep 30"]);
    await handle.waitStdout("24 80");
    handle.sendControl(resizeFrame(1, 41, 99));
    await handle.waitEvent("resized");
    handle.write("go\n");
    await handle.waitStdout("41 99");
    handle.sendControl(signalFrame("SIGTERM"));
    const result = await handle.done;
    expect(result.violation).toBeNull();
    expect(result.events).toEqual([started, { type: "resized", protocolVersion: 1, id: 1 }, eof, exit(null, "SIGTERM")] as never);
    expect(result.signal).toBe("SIGTERM");
  });

  test("signal (later request on stdin) kills the workload and the exec reports SIGKILL", async () => {
    const env = laterEnvelope(["sleep", "30"], { env: { PATH }, options: ws.options });
    const handle = startExec(ws.id, env);
    await handle.waitEvent("started");
    const killed = await runBinary(["signal", "--workspace-id", ws.id, "--exec-id", env.execId as string, "--signal", "SIGKILL"], { stdin: laterRequest(INSTANCE_ID, ws.options) });
    expect(killed.stderr).toBe("");
    expect(killed.code).toBe(0);
    const result = await handle.done;
    expect(result.events.at(-1)).toEqual(exit(null, "SIGKILL") as never);
  });

  test("the helper (argv paseo-workspace-helper, env {}) is found on the host's PATH", async () => {
    const dir = tempDir("phr-later-helper-");
    try {
      const bin = join(dir.path, "bin");
      mkdirSync(bin);
      writeFileSync(join(bin, "paseo-workspace-helper"), `#!/bin/sh\nprintf 'helper %s in %s' "$*" "$(pwd)"\n`);
      chmodSync(join(bin, "paseo-workspace-helper"), 0o755);
      // A decoy in the workspace itself: the relative entries of the host PATH must not find it.
      writeFileSync(join(ws.root, "paseo-workspace-helper"), "#!/bin/sh\necho decoy\n");
      chmodSync(join(ws.root, "paseo-workspace-helper"), 0o755);
      const env = laterEnvelope(["paseo-workspace-helper", "describe"], { purpose: { kind: "workspace-helper" }, options: ws.options });
      // The runtime inherits the daemon's environment; the helper call's own env stays {}.
      const handle = startExec(ws.id, env, { env: { ...(process.env as Record<string, string>), PATH: `.:relative:${bin}:${PATH}` } });
      handle.closeStdin();
      const result = await handle.done;
      expect(result.violation).toBeNull();
      expect(result.stdout.toString()).toBe(`helper describe in ${ws.root}`);

      const missing = startExec(ws.id, { ...env, execId: `${env.execId}`.replace(/^./, "f") }, { env: { ...(process.env as Record<string, string>), PATH: "/nonexistent" } });
      missing.closeStdin();
      const refused = await missing.done;
      expect(refused.code).toBe(127);
      expect(refused.events).toEqual([]);
      expect(refused.stderr).toContain("the host PATH=/nonexistent");
    } finally {
      rmSync(join(ws.root, "paseo-workspace-helper"), { force: true });
      dir.cleanup();
    }
  });
});

describe.skipIf(PROC)("an envelope that breaks its dialect launches nothing", () => {
  async function refused(workspaceId: string, text: string): Promise<ExecResult> {
    const handle = startExec(workspaceId, {}, { holdEnvelope: true });
    handle.sendControl(text);
    handle.closeControls();
    handle.closeStdin();
    const result = await handle.done;
    expect(result.code).toBe(1);
    expect(result.events).toEqual([]);
    expect(result.stdout.toString()).toBe("");
    return result;
  }

  test("a later envelope with a seed purpose is refused as a mixture", async () => {
    const text = JSON.stringify(laterEnvelope(["/usr/bin/touch", join(ws.root, "launched")], { purpose: { kind: "workspace-script", script: "verify" }, options: ws.options }));
    const result = await refused(ws.id, `${text}\n`);
    expect(result.stderr).toContain(
      'invalid fd 3 control: purpose: unknown key "script" (read as the later dialect because it has runtimeInstanceId, but this field is written the seed dialect\'s way: a message must not mix the two dialects)',
    );
    expect(await Bun.file(join(ws.root, "launched")).exists()).toBe(false);
  });

  test("a seed envelope for a later workspace, and a later one for a seed workspace, are refused", async () => {
    const seedText = JSON.stringify(envelope(["/usr/bin/touch", join(ws.root, "launched")], { options: ws.options }));
    expect((await refused(ws.id, `${seedText}\n`)).stderr).toContain(`workspace "${ws.id}" was created in the later protocol dialect (requests with runtimeInstanceId) and this request is in the seed dialect`);
    const laterText = JSON.stringify(laterEnvelope(["/usr/bin/touch", join(seedWs.root, "launched")], { options: seedWs.options }));
    expect((await refused(seedWs.id, `${laterText}\n`)).stderr).toContain(`workspace "${seedWs.id}" was created in the seed protocol dialect (requests without runtimeInstanceId) and this request is in the later dialect`);
    expect(await Bun.file(join(ws.root, "launched")).exists()).toBe(false);
    expect(await Bun.file(join(seedWs.root, "launched")).exists()).toBe(false);
  });

  test("an envelope from another runtime instance is an ownership mismatch", async () => {
    const text = JSON.stringify(laterEnvelope(["/bin/true"], { runtimeInstanceId: instanceIdOf("/elsewhere"), options: ws.options }));
    expect((await refused(ws.id, `${text}\n`)).stderr).toContain(`ownership mismatch: workspace "${ws.id}" belongs to runtime instance "${INSTANCE_ID}"`);
  });

  test.each(["later", "seed"])("a duplicate key on fd 3 is refused with its path (%s dialect)", async (dialect) => {
    const target = dialect === "later" ? ws : seedWs;
    const base = dialect === "later" ? laterEnvelope(["/usr/bin/env"], { options: target.options }) : envelope(["/usr/bin/env"], { options: target.options });
    const text = JSON.stringify({ ...base, env: { PATH: "/usr/bin" } }).replace('"env":{"PATH":"/usr/bin"}', `"env":{"PATH":"/usr/bin","PATH":"${join(target.root, "evil")}"}`);
    const result = await refused(target.id, `${text}\n`);
    expect(result.stderr).toContain('fd 3 control frame 1: invalid fd 3 control: env: duplicate key "PATH" (a JSON object must not repeat a key)');
  });
});
