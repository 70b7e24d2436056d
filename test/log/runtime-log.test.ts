/**
 * The runtime log (issue 13 "A runtime log, for operators"; issue 15 "config typos are
 * silent"), against the compiled binary driven like the daemon: what lands in
 * `<home>/log/runtime.log`, what never does, how it is bounded under parallel writers, and
 * what `logs` shows.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, request, runBinary, type RunResult } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { PATH, envelope, newExecId } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { until } from "../support/poll.ts";

setDefaultTimeout(60_000);

const STRESS = process.env.PASEO_STRESS === "1";
let ws: ReadyWorkspace | undefined;
afterEach(() => {
  ws?.cleanup();
  ws = undefined;
});

type Entry = Record<string, unknown> & { level: string; event: string };

/** The log files, oldest first (runtime.log.3 … runtime.log). */
function logFiles(home: string): string[] {
  const dir = join(home, "log");
  return ["runtime.log.3", "runtime.log.2", "runtime.log.1", "runtime.log"].map((name) => join(dir, name)).filter((path) => existsSync(path));
}

/** Every line of the log, oldest first, each required to be one complete JSON object. */
function logEntries(home: string): Entry[] {
  const entries: Entry[] = [];
  for (const path of logFiles(home)) {
    const text = readFileSync(path, "utf8");
    if (text !== "") expect(text.endsWith("\n")).toBe(true);
    for (const line of text.split("\n").slice(0, -1)) entries.push(JSON.parse(line));
  }
  return entries;
}

/** The raw bytes of every log file, for "never appears" checks. */
function logBytes(home: string): string {
  return logFiles(home)
    .map((path) => readFileSync(path, "utf8"))
    .join("");
}

function lifecycle(command: string, workspaceId: string, options: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<RunResult> {
  return runBinary([command, "--workspace-id", workspaceId], { stdin: request(options, extra) });
}

function logsCommand(home: string, ...args: string[]): Promise<RunResult> {
  return runBinary(["logs", "--home", home, ...args]);
}

function hostInput(workspaceId: string, path: string) {
  return { input: { workspaceId, project: { projectId: "p", source: { kind: "host-directory", path } }, placement: { kind: "existing" } } };
}

describe("logs shows a failed exec's reason", () => {
  test("an exec refused before launch (cwd outside the workspace): reason, workspace id and exec id", async () => {
    ws = await readyWorkspace("log");
    const spawn = envelope(["/bin/true"], { options: ws.options, env: { PATH }, cwd: "../.." });
    const result = await startExec(ws.id, spawn).done;
    expect(result.code).toBe(1);
    const reason = result.stderr.replace(/^paseo-host-runtime: /, "").trimEnd();
    expect(reason).toContain("cwd");

    const json = await logsCommand(ws.home, "--exec-id", spawn.execId as string, "--json");
    expect(json.code).toBe(0);
    const lines = json.stdout.trimEnd().split("\n").map((line) => JSON.parse(line));
    expect(lines).toEqual([
      expect.objectContaining({ level: "error", event: "exec", op: "exec", outcome: "refused", status: 1, workspaceId: ws.id, execId: spawn.execId, message: reason, mode: "pipes" }),
    ]);
    expect(lines[0].pid).toBeGreaterThan(0);
    expect(Date.parse(lines[0].time)).toBeGreaterThan(0);

    const human = await logsCommand(ws.home, "--workspace-id", ws.id);
    expect(human.code).toBe(0);
    const line = human.stdout.split("\n").find((l) => l.includes(spawn.execId as string));
    expect(line).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{3} ERROR exec ${ws.id} exec ${spawn.execId} pid \\d+: refused \\(exit 1\\), nothing launched: `));
    expect(line).toContain(reason);
  });

  test("a failure after launch (an invalid PTY frame), which only fd 4 saw before, is in the log", async () => {
    ws = await readyWorkspace("log");
    const spawn = envelope(["/bin/sleep", "30"], { options: ws.options, env: { PATH }, stdio: { kind: "pty", rows: 24, cols: 80 } });
    const handle = startExec(ws.id, spawn, { keepControls: true });
    await handle.waitEvent("started");
    handle.sendControl('{"type":"signal","protocolVersion":1,"signal":"SIGNOPE"}\n');
    const error = (await handle.waitEvent("error")) as { message: string };
    await handle.waitEvent("exit");
    handle.closeStdin();
    handle.closeControls();
    const result = await handle.done;
    expect(result.signal).toBe("SIGKILL");

    const entries = logEntries(ws.home).filter((e) => e.execId === spawn.execId);
    expect(entries.map((e) => [e.level, e.event])).toEqual([
      ["error", "exec-error"],
      ["info", "exec"],
    ]);
    expect(entries[0]).toMatchObject({ workspaceId: ws.id, message: error.message, sentToDaemon: true });
    expect(entries[0]!.workloadPid).toBeGreaterThan(0);
    expect(entries[1]).toMatchObject({ outcome: "exited", code: null, signal: "SIGKILL", mode: "pty", workloadPid: entries[0]!.workloadPid });

    const human = await logsCommand(ws.home, "--exec-id", spawn.execId as string);
    expect(human.stdout).toContain(`ERROR exec ${ws.id} exec ${spawn.execId} pid ${entries[0]!.pid} workload ${entries[0]!.workloadPid}: error event: ${error.message}`);
    expect(human.stdout).toContain("killed by SIGKILL");
  });
});

describe("lifecycle operations", () => {
  test("every outcome is logged: op, workspace id, status, duration, and the message on failure", async () => {
    ws = await readyWorkspace("log");
    const options = ws.options;
    expect((await lifecycle("pause", ws.id, options)).code).toBe(0);
    const failed = await lifecycle("pause", "no-such-workspace", options);
    expect(failed.code).toBe(1);
    const entries = logEntries(ws.home).filter((e) => e.event === "op");
    expect(entries.map((e) => [e.op, e.workspaceId, e.level, e.status])).toEqual([
      ["create", ws.id, "info", 0],
      ["pause", ws.id, "info", 0],
      ["pause", "no-such-workspace", "error", 1],
    ]);
    for (const entry of entries) expect(typeof entry.durationMs).toBe("number");
    expect(entries[2]!.message).toBe(failed.stderr.replace(/^paseo-host-runtime: /, "").trimEnd());
    expect(entries[0]!.owner).toBe("default");
  });

  test("a diagnostic written while an operation works is in the log too, with the operation and workspace", async () => {
    const dir = tempDir("phr-log-");
    try {
      const home = join(dir.path, "home");
      const plain = join(dir.path, "plain");
      mkdirSync(plain);
      writeFileSync(join(plain, "a.txt"), "a");
      expect(Bun.spawnSync(["mkfifo", join(plain, "pipe")]).exitCode).toBe(0);
      const result = await lifecycle("create", "w1", { stateDirectory: home, hostDirectory: "clone" }, hostInput("w1", plain));
      expect(result.code).toBe(0);
      const said = result.stderr.split("\n").filter((line) => line.includes("pipe")).map((line) => line.replace(/^paseo-host-runtime: /, ""));
      expect(said).toHaveLength(1);
      const entries = logEntries(home);
      expect(entries.map((e) => [e.level, e.event, e.op, e.workspaceId])).toEqual([
        ["warn", "diagnostic", "create", "w1"],
        ["info", "op", "create", "w1"],
      ]);
      expect(entries[0]!.message).toBe(said[0]!);
    } finally {
      dir.cleanup();
    }
  });

  test("reconcile names every workspace it removed, and signal its signal", async () => {
    ws = await readyWorkspace("log");
    const signal = await runBinary(["signal", "--workspace-id", ws.id, "--exec-id", "e-never", "--signal", "SIGTERM"], { stdin: request(ws.options) });
    expect(signal.code).toBe(1);
    expect((await runBinary(["reconcile"], { stdin: request(ws.options, { workspaceIds: [] }) })).code).toBe(0);
    const entries = logEntries(ws.home).filter((e) => e.op !== "create");
    expect(entries.map((e) => [e.op, e.event, e.workspaceId ?? null, e.execId ?? null, e.signal ?? null])).toEqual([
      ["signal", "op", ws.id, "e-never", "SIGTERM"],
      ["reconcile", "removed", ws.id, null, null],
      ["reconcile", "op", null, null, null],
    ]);
    expect(entries[1]).toMatchObject({ level: "info", status: "ready", kind: "adopted", root: ws.root });
    const human = (await logsCommand(ws.home, "--workspace-id", ws.id)).stdout;
    expect(human).toContain(`INFO  reconcile ${ws.id} pid ${entries[1]!.pid}: removed workspace (was ready, adopted at ${ws.root})`);
    expect(human).toContain(`ERROR signal ${ws.id} exec e-never pid ${entries[0]!.pid}: SIGTERM failed (exit 1)`);
  });

  test("inspect successes are kept at debug only (it runs before every exec)", async () => {
    ws = await readyWorkspace("log");
    expect((await lifecycle("inspect", ws.id, ws.options)).code).toBe(0);
    expect(logEntries(ws.home).filter((e) => e.op === "inspect")).toEqual([]);
    expect((await lifecycle("inspect", ws.id, { ...ws.options, logLevel: "debug" })).code).toBe(0);
    expect(logEntries(ws.home).filter((e) => e.op === "inspect").map((e) => [e.level, e.status])).toEqual([["debug", 0]]);
  });

  test('logLevel "error" keeps only errors', async () => {
    ws = await readyWorkspace("log");
    const options = { ...ws.options, logLevel: "error", stopTimeoutMS: 1 };
    expect((await lifecycle("pause", ws.id, options)).code).toBe(0);
    expect((await lifecycle("resume", ws.id, options)).code).toBe(0);
    expect((await startExec(ws.id, envelope(["/bin/true"], { options, env: { PATH } })).done).code).toBe(0);
    const refused = envelope(["no-such-program"], { options, env: { PATH } });
    expect((await startExec(ws.id, refused).done).code).toBe(127);
    expect((await lifecycle("pause", "no-such-workspace", options)).code).toBe(1);
    const mine = logEntries(ws.home).filter((e) => e.op !== "create");
    expect(mine.map((e) => [e.level, e.event, e.op, e.execId ?? e.workspaceId])).toEqual([
      ["error", "exec", "exec", refused.execId],
      ["error", "op", "pause", "no-such-workspace"],
    ]);
  });
});

describe("what never reaches the log", () => {
  test("env values and URL credentials: a secret planted in env and argv, a credential URL in a create that fails", async () => {
    ws = await readyWorkspace("log");
    const tag = `${process.pid}x${Date.now().toString(36)}`;
    const token = `tok-${tag}-Zq9`;
    const envSecret = `env-secret-${tag}`;
    const pathSecret = `/opt/secret-path-${tag}`;
    const lifecycleSecret = `lifecycle-secret-${tag}`;
    const options = { ...ws.options, logLevel: "debug", lifecycleEnvironment: { DEPLOY_KEY: lifecycleSecret } };

    const url = `https://deploy:${token}@127.0.0.1:9/private/repo.git`;
    const input = { workspaceId: "w-cred", project: { projectId: "p", source: { kind: "git", url, revision: "" } }, placement: { kind: "existing" } };
    const create = await lifecycle("create", "w-cred", options, { input });
    expect(create.code).toBe(1);

    // Our own "not found" message would quote PATH; argv quotes the other secret.
    const notFound = envelope(["no-such-program", envSecret], { options, env: { PATH: pathSecret, API_TOKEN: envSecret } });
    expect((await startExec(ws.id, notFound).done).code).toBe(127);
    const ran = envelope(["/bin/sh", "-c", `echo "$API_TOKEN" ${envSecret}; exit 3`], { options, env: { PATH, API_TOKEN: envSecret } });
    const result = await startExec(ws.id, ran).done;
    expect(result.code).toBe(3);
    expect(result.stdout.toString()).toBe(`${envSecret} ${envSecret}\n`);

    const bytes = logBytes(ws.home);
    for (const secret of [token, envSecret, pathSecret, lifecycleSecret]) expect(bytes).not.toContain(secret);
    const entries = logEntries(ws.home);
    const failure = entries.find((e) => e.op === "create" && e.workspaceId === "w-cred" && e.event === "op")!;
    expect(failure).toMatchObject({ level: "error", status: 1 });
    const refusal = entries.find((e) => e.execId === notFound.execId && e.event === "exec")!;
    expect(refusal.message).toContain("[env PATH]");
    const spawn = entries.find((e) => e.execId === ran.execId && e.event === "spawn")!;
    expect(spawn).toMatchObject({ argv: ["/bin/sh", "-c", `echo "$API_TOKEN" [env API_TOKEN]; exit 3`], envKeys: ["PATH", "API_TOKEN"] });
    expect(spawn.optionKeys).toEqual(Object.keys(options));
    expect(Object.hasOwn(spawn, "env")).toBe(false);
  });
});

describe("unknown option keys", () => {
  test("a lifecycle operation warns on stderr naming the nearest key, logs it, and still succeeds", async () => {
    const dir = tempDir("phr-log-");
    try {
      const home = join(dir.path, "home");
      const project = join(dir.path, "project");
      mkdirSync(project);
      const options = { stateDirectory: home, statedirectory: "/elsewhere", zzzzzzzzzz: 1 };
      const result = await lifecycle("create", "w1", options, hostInput("w1", project));
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout).type).toBe("state");
      expect(result.stderr).toBe(
        'paseo-host-runtime: warning: unknown option "statedirectory" is ignored; did you mean "stateDirectory"?\n' +
          'paseo-host-runtime: warning: unknown option "zzzzzzzzzz" is ignored\n',
      );
      const warnings = logEntries(home).filter((e) => e.event === "unknown-option");
      expect(warnings.map((e) => [e.level, e.op, e.workspaceId, e.key, e.nearest])).toEqual([
        ["warn", "create", "w1", "statedirectory", "stateDirectory"],
        ["warn", "create", "w1", "zzzzzzzzzz", null],
      ]);
      // The value of an unknown key is never logged.
      expect(logBytes(home)).not.toContain("/elsewhere");
      const human = await logsCommand(home);
      expect(human.stdout).toContain(`WARN  create w1 pid ${warnings[0]!.pid}: unknown option "statedirectory" is ignored; did you mean "stateDirectory"?`);
    } finally {
      dir.cleanup();
    }
  });

  test("exec logs it only: its stderr belongs to the workload", async () => {
    ws = await readyWorkspace("log");
    const spawn = envelope(["/bin/true"], { options: { ...ws.options, helperpath: "/x" }, env: { PATH } });
    const result = await startExec(ws.id, spawn).done;
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const warnings = logEntries(ws.home).filter((e) => e.execId === spawn.execId && e.event === "unknown-option");
    expect(warnings.map((e) => [e.key, e.nearest])).toEqual([["helperpath", "helperPath"]]);
  });
});

describe("the log's files", () => {
  test("created 0700 / 0600 (also under umask 0), inside an existing home only", async () => {
    const dir = tempDir("phr-log-");
    try {
      const home = join(dir.path, "home");
      const project = join(dir.path, "project");
      mkdirSync(project);
      // An inspect of a home that does not exist creates neither the home nor a log.
      expect((await lifecycle("inspect", "w1", { stateDirectory: home, logLevel: "debug" })).code).toBe(0);
      expect(existsSync(home)).toBe(false);
      const proc = Bun.spawn(["/bin/sh", "-c", 'umask 0; exec "$0" create --workspace-id w1', BIN], { stdin: new Blob([request({ stateDirectory: home }, hostInput("w1", project))]), stdout: "ignore", stderr: "pipe" });
      expect(await proc.exited).toBe(0);
      const mode = (path: string) => (lstatSync(path).mode & 0o777).toString(8);
      expect(mode(join(home, "log"))).toBe("700");
      expect(mode(join(home, "log", "runtime.log"))).toBe("600");
      expect(mode(join(home, "log", "runtime.log.lock"))).toBe("600");
      expect(readdirSync(join(home, "log")).sort()).toEqual(["runtime.log", "runtime.log.lock"]);
    } finally {
      dir.cleanup();
    }
  });

  test("a group-writable log directory or a symlinked runtime.log is refused with a warning; the call still succeeds", async () => {
    ws = await readyWorkspace("log");
    const logDir = join(ws.home, "log");
    const before = readFileSync(join(logDir, "runtime.log"), "utf8");
    chmodSync(logDir, 0o770);
    const open = await lifecycle("pause", ws.id, ws.options);
    expect(open.code).toBe(0);
    expect(open.stderr).toBe(`paseo-host-runtime: warning: not writing the runtime log: runtime log directory ${logDir} is group- or world-writable (mode 770); fix it with: chmod 700 ${logDir}\n`);
    expect(readFileSync(join(logDir, "runtime.log"), "utf8")).toBe(before);

    chmodSync(logDir, 0o700);
    const elsewhere = join(ws.root, "..", "elsewhere.txt");
    writeFileSync(elsewhere, "");
    renameSync(join(logDir, "runtime.log"), join(logDir, "runtime.log.1"));
    symlinkSync(elsewhere, join(logDir, "runtime.log"));
    const linked = await lifecycle("resume", ws.id, ws.options);
    expect(linked.code).toBe(0);
    expect(linked.stderr).toMatch(/^paseo-host-runtime: warning: not writing the runtime log: .*ELOOP/);
    expect(readFileSync(elsewhere, "utf8")).toBe("");
  });

  test("a file loosened by hand is closed to 0600 again at the next line", async () => {
    ws = await readyWorkspace("log");
    chmodSync(join(ws.home, "log", "runtime.log"), 0o644);
    expect((await lifecycle("pause", ws.id, ws.options)).code).toBe(0);
    expect(lstatSync(join(ws.home, "log", "runtime.log")).mode & 0o777).toBe(0o600);
  });
});

/** `count` unknown keys naming writer `w`, process `p`: each becomes one log line of about `width` bytes. */
function markerKeys(w: number, p: number, count: number, width = 200): Record<string, number> {
  const keys: Record<string, number> = {};
  for (let i = 0; i < count; i++) keys[`w${w}-p${p}-k${i}-${"x".repeat(width)}`] = 1;
  return keys;
}

/** (writer, sequence number) of a marker line, or null. */
function marker(entry: Entry, perProcess: number): { w: number; seq: number } | null {
  const match = typeof entry.key === "string" ? /^w(\d+)-p(\d+)-k(\d+)-/.exec(entry.key) : null;
  return match ? { w: Number(match[1]), seq: Number(match[2]) * perProcess + Number(match[3]) } : null;
}

const MAX_BYTES = 65_536;

describe("rotation", () => {
  test("parallel writers: every file stays under the bound, 3 rotated files at most, no torn or lost line", async () => {
    ws = await readyWorkspace("log");
    const home = ws.home;
    // Each process appends 400 lines back to back, so writers' bursts overlap and rotations
    // (every ~200 lines at 64 KiB) race each other.
    const writers = 6;
    const processes = STRESS ? 12 : 3;
    const perProcess = 400;
    const options = { ...ws.options, logMaxBytes: MAX_BYTES };
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let p = 0; p < processes; p++) {
          const result = await lifecycle("inspect", ws!.id, { ...options, ...markerKeys(w, p, perProcess, 20) });
          expect(result.code).toBe(0);
        }
      }),
    );
    const names = readdirSync(join(home, "log")).sort();
    expect(names).toEqual(["runtime.log", "runtime.log.1", "runtime.log.2", "runtime.log.3", "runtime.log.lock"]);
    for (const path of logFiles(home)) {
      expect(lstatSync(path).size).toBeLessThanOrEqual(MAX_BYTES);
      expect(lstatSync(path).mode & 0o777).toBe(0o600);
      // A file is rotated only when the next line would not fit: one rotation at a time, never
      // a second one on a file just started (which would drop a full file of newer lines).
      if (!path.endsWith("runtime.log")) expect(lstatSync(path).size).toBeGreaterThan(MAX_BYTES - 1024);
    }
    // logEntries parses every line: a torn or interleaved line would throw here.
    const entries = logEntries(home);
    let kept = 0;
    for (let w = 0; w < writers; w++) {
      const seqs = entries.map((e) => marker(e, perProcess)).filter((m) => m?.w === w).map((m) => m!.seq);
      kept += seqs.length;
      // Rotation drops only the oldest lines, so what is kept of a writer is one unbroken run
      // ending at its last line (or nothing, when others wrote a whole log's worth after it).
      if (seqs.length === 0) continue;
      expect(seqs.at(-1)).toBe(processes * perProcess - 1);
      expect(seqs.filter((seq, i) => i > 0 && seq !== seqs[i - 1]! + 1)).toEqual([]);
    }
    expect(kept).toBeGreaterThan(3 * (MAX_BYTES / 2500));
  });

  test("logs --follow prints new lines as they come, across rotations, until interrupted", async () => {
    ws = await readyWorkspace("log");
    const follower = Bun.spawn([BIN, "logs", "--home", ws.home, "--follow", "--json"], { stdout: "pipe", stderr: "pipe" });
    let out = "";
    const reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of follower.stdout) out += decoder.decode(chunk, { stream: true });
    })();
    try {
      const deadline = (what: string, probe: () => boolean) => until(() => `${what}; got ${out.length} bytes`, probe, 20_000);
      await deadline("the existing create line", () => out.includes('"op":"create"'));
      const perProcess = 100;
      const processes = 4; // ~180 KB: at least two rotations at 64 KiB
      for (let p = 0; p < processes; p++) {
        expect((await lifecycle("inspect", ws.id, { ...ws.options, logMaxBytes: MAX_BYTES, ...markerKeys(0, p, perProcess) })).code).toBe(0);
      }
      const last = `w0-p${processes - 1}-k${perProcess - 1}-`;
      await deadline("the last marker", () => out.includes(last));
      expect(existsSync(join(ws.home, "log", "runtime.log.2"))).toBe(true);
      const seqs = out
        .trimEnd()
        .split("\n")
        .map((line) => marker(JSON.parse(line), perProcess))
        .filter((m) => m !== null)
        .map((m) => m!.seq);
      expect(seqs).toEqual(Array.from({ length: processes * perProcess }, (_, i) => i));
    } finally {
      follower.kill("SIGINT");
      await follower.exited;
      await reading;
    }
    expect(follower.signalCode).toBe("SIGINT");
  });
});

describe("logs", () => {
  test("a home without a log, and a home that does not exist, are told apart clearly", async () => {
    const dir = tempDir("phr-log-");
    try {
      const none = await logsCommand(dir.path);
      expect(none.code).toBe(0);
      expect(none.stdout).toBe("");
      expect(none.stderr).toBe(`paseo-host-runtime: no runtime log in ${dir.path} yet: ${dir.path}/log/runtime.log is written by lifecycle operations and exec\n`);
      const missing = await logsCommand(join(dir.path, "nope"));
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`runtime home ${join(dir.path, "nope")} does not exist`);
    } finally {
      dir.cleanup();
    }
  });

  test("--workspace-id, --exec-id and --owner select lines; a filter matching nothing says so", async () => {
    ws = await readyWorkspace("log");
    const spawn = envelope(["/bin/true"], { options: ws.options, env: { PATH }, execId: newExecId() });
    expect((await startExec(ws.id, spawn).done).code).toBe(0);
    const byExec = (await logsCommand(ws.home, "--exec-id", spawn.execId as string, "--json")).stdout.trimEnd().split("\n");
    expect(byExec.map((line) => JSON.parse(line).event)).toEqual(["exec"]);
    const byWorkspace = (await logsCommand(ws.home, "--workspace-id", ws.id, "--json")).stdout.trimEnd().split("\n");
    expect(byWorkspace.map((line) => JSON.parse(line).op)).toEqual(["create", "exec"]);
    const byOwner = await logsCommand(ws.home, "--owner", "someone-else");
    expect(byOwner.stdout).toBe("");
    expect(byOwner.stderr).toBe(`paseo-host-runtime: no line of ${join(ws.home, "log")} matches\n`);
  });
});
