/**
 * `--remote` at its edges, against a real sshd on 127.0.0.1 and the compiled binary:
 * - a remote runtime that accepts the session and never answers (stalled, stopped) ends the
 *   call after remote.idleTimeoutSeconds without progress: exit 1 naming the host and what was
 *   waited for, a log line; an exec gets an `error` event and its remote workload is ended as
 *   on a dropped connection; a slow remote git clone is progress (keepalives) and survives;
 * - a remote that sends garbage after the mux greeting is an `error` event;
 * - what a remote host reports is shown escaped by `remote doctor`.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseSshUrl } from "../../src/ssh-url.ts";
import { BIN, runBinary } from "../../kit/binary.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { tempDir } from "../../kit/scratch.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { withoutSsh } from "../support/tools.ts";
import { createInput, ok, remoteOp } from "../support/operation.ts";
import { makeRemote, makeRepo } from "../support/git.ts";
import { processesWith, MARK, killMarked } from "../support/procs.ts";
import { until } from "../support/poll.ts";
import { runtimeLogPath } from "../support/store.ts";

setDefaultTimeout(60_000);

const NO_SSHD = withoutSsh("remote/edges.test.ts");
const TAG = String(process.pid);
/** The idle timeout the stalled calls run with, in seconds. */
const IDLE = 2;

let scratch: { path: string; cleanup: () => void };
let lab: SshLab;
let key: string;
let repo: string;

/**
 * The remote program: the real binary, except for workspace ids that ask for a misbehaving
 * remote side (a stalled lifecycle call, a stalled or garbling exec-remote, a stalled
 * receive-source, a doctor report with control characters). Each sleep has a unique argument
 * so the test can find and end it.
 */
function remoteProgram(dir: string): string {
  const path = join(dir, "edgy-runtime");
  const hello = '{"mux":1,"version":"x"}';
  const helloFrame = `\\001\\000\\000\\000\\000\\${hello.length.toString(8).padStart(3, "0")}${hello}`;
  const report = '{"ok":true,"checks":[{"name":"evil\\u001b]0;owned\\u0007","status":"ok","detail":"line\\nfake \\u001b[2J\\u009b31m"}]}';
  writeFileSync(
    path,
    [
      "#!/bin/sh",
      `case "$1:$3" in`,
      `  inspect:stall-${TAG}) exec sleep 8881.${TAG};;`,
      `  exec-remote:stall-${TAG}) exec sleep 8882.${TAG};;`,
      `  exec-remote:garbage-${TAG}) cat >/dev/null & printf '${helloFrame}garbage after the greeting'; sleep 2; exit 0;;`,
      `  receive-source:*) [ -e ${dir}/stall-receive ] && exec sleep 8883.${TAG};;`,
      `  doctor:*) printf '%s\\n' '${report}'; exit 0;;`,
      "esac",
      `PATH=${dir}/slow-git:$PATH exec ${BIN} "$@"`,
      "",
    ].join("\n"),
  );
  chmodSync(path, 0o755);
  // While `slow-clone` exists: a git that is silent for 7 s before every clone (a slow link).
  mkdirSync(join(dir, "slow-git"));
  writeFileSync(join(dir, "slow-git", "git"), `#!/bin/sh\n[ "$1" = clone ] && [ -e ${dir}/slow-clone ] && sleep 7\nexec /usr/bin/git "$@"\n`);
  chmodSync(join(dir, "slow-git", "git"), 0o755);
  return path;
}

// Without sshd every block below is skipped, and there is nothing to start or stop.
if (!NO_SSHD) {
  beforeAll(async () => {
    scratch = tempDir("phr-remote-edges-");
    lab = await startSshd(remoteProgram(scratch.path));
    key = parseSshUrl(lab.url).key;
    repo = makeRepo(join(scratch.path, "repo"));
  });

  afterAll(async () => {
    for (const n of [1, 2, 3]) for (const pid of processesWith(`sleep\u0000888${n}.${TAG}`)) process.kill(pid, "SIGKILL");
    killMarked();
    await lab.stop();
    scratch.cleanup();
  });
}

/** The lab's options with a short idle timeout. */
function quick(extra: Record<string, unknown> = {}) {
  return { ...lab.options, remote: { ...lab.options.remote, idleTimeoutSeconds: IDLE, ...extra } };
}

/** The local home's log lines. */
function localEntries(): Record<string, any>[] {
  const path = runtimeLogPath(lab.localHome);
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

/** Ends the remote side's stand-in for a stalled runtime (`sleep 888N.<pid>`), once it is there. */
async function endStalled(n: number): Promise<void> {
  await until(`the stalled remote side ${n} runs`, () => processesWith(`sleep\u0000888${n}.${TAG}`).length > 0);
  for (const pid of processesWith(`sleep\u0000888${n}.${TAG}`)) process.kill(pid, "SIGKILL");
}

describe.skipIf(NO_SSHD)("a stalled remote runtime ends the call after remote.idleTimeoutSeconds", () => {
  test("inspect against a remote binary that never answers: exit 1 naming the host and what was waited for, logged", async () => {
    const id = `stall-${TAG}`;
    const started = performance.now();
    const result = await remoteOp(lab, "inspect", id, { options: quick() });
    const seconds = (performance.now() - started) / 1000;
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    const message = `${key} showed no progress for ${IDLE} s while this side waited for \`inspect\` to answer (remote.idleTimeoutSeconds)`;
    expect(result.stderr).toContain(message);
    // Bounded, not a hang (the generous upper bound is only there so a hang fails the test).
    expect(seconds).toBeLessThan(30);
    const line = localEntries().find((entry) => entry.op === "inspect" && entry.workspaceId === id && entry.event === "op");
    expect(line).toMatchObject({ level: "error", status: 1 });
    // The log hides the login (user@host becomes ***@host).
    expect(line!.message).toContain(message.replace("root@", "***@"));
    await endStalled(1);
  });

  test("create's source shipping, to a receive-source that never reads: the same bound", async () => {
    writeFileSync(join(scratch.path, "stall-receive"), "");
    try {
      const id = `ship-${TAG}`;
      const result = await remoteOp(lab, "create", id, { input: createInput(id, { kind: "host-directory", path: repo }), options: quick() });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`${key} showed no progress for ${IDLE} s while this side waited for \`receive-source\` to take the source and answer`);
      await endStalled(3);
    } finally {
      Bun.spawnSync(["rm", "-f", join(scratch.path, "stall-receive")]);
    }
  });

  test("a git clone silent for longer than the idle timeout is progress: the remote runtime's keepalives", async () => {
    const id = `slow-${TAG}`;
    const url = makeRemote(repo, join(scratch.path, "origin.git"));
    writeFileSync(join(scratch.path, "slow-clone"), "");
    try {
      const created = await remoteOp(lab, "create", id, { input: createInput(id, { kind: "git", url, revision: "main" }), options: quick({ idleTimeoutSeconds: 3 }) });
      expect(created.stderr).not.toContain("showed no progress");
      expect(created.code).toBe(0);
    } finally {
      Bun.spawnSync(["rm", "-f", join(scratch.path, "slow-clone")]);
    }
    ok(await remoteOp(lab, "destroy", id, { options: lab.options }));
  });
});

describe.skipIf(NO_SSHD)("exec sessions", () => {
  test("a remote exec-remote that never greets: an error event after the idle timeout, exit 1", async () => {
    const handle = startExec(`stall-${TAG}`, envelope(["/bin/true"], { options: quick() }), { prefix: lab.prefix });
    const result = await handle.done;
    expect(result.code).toBe(1);
    expect(result.events.map((event) => event.type)).toEqual(["error"]);
    expect((result.events[0] as { message: string }).message).toContain(`${key} showed no progress for ${IDLE} s while this side waited for the remote exec to report`);
    await endStalled(2);
  });

  test("a remote exec side stopped mid-exec: error event and exit 1; once it runs again it ends the workload, as on a dropped connection", async () => {
    const id = `stop-${TAG}`;
    ok(await remoteOp(lab, "create", id, { input: createInput(id, { kind: "host-directory", path: repo }), options: lab.options }));
    const sleep = `300.${TAG}`;
    const handle = startExec(id, envelope(["sleep", sleep], { options: quick(), env: { PATH, ...MARK } }), { prefix: lab.prefix });
    await handle.waitEvent("started");
    const server = processesWith(`exec-remote\u0000--workspace-id\u0000${id}`)[0]!;
    process.kill(server, "SIGSTOP");
    try {
      const result = await handle.done;
      expect(result.code).toBe(1);
      expect(result.events.map((event) => event.type)).toEqual(["started", "error"]);
      expect((result.events[1] as { message: string }).message).toContain(`${key} showed no progress for ${IDLE} s while this side waited for the remote exec to report`);
      expect(processesWith(`sleep\u0000${sleep}`)).toHaveLength(1);
    } finally {
      process.kill(server, "SIGCONT");
    }
    await until("the remote workload is ended", () => processesWith(`sleep\u0000${sleep}`).length === 0);
    ok(await remoteOp(lab, "destroy", id, { options: lab.options }));
  });

  test("a workload quiet for longer than the idle timeout is not a stalled remote: PING frames keep the session", async () => {
    const id = `quiet-${TAG}`;
    ok(await remoteOp(lab, "create", id, { input: createInput(id, { kind: "host-directory", path: repo }), options: lab.options }));
    const result = await startExec(id, envelope(["/bin/sh", "-c", "sleep 7; echo done"], { options: quick({ idleTimeoutSeconds: 3 }), env: { PATH, ...MARK } }), { prefix: lab.prefix }).done;
    expect(result.events.map((event) => event.type)).toEqual(["started", "eof", "exit"]);
    expect(result.stdout.toString()).toBe("done\n");
    ok(await remoteOp(lab, "destroy", id, { options: lab.options }));
  });

  test("a 2 MiB spawn envelope to the local half: `fd 3 frame larger than 1 MiB`, an error event, nothing sent to the host", async () => {
    const result = await startExec(`big-${TAG}`, envelope(["/bin/true"], { options: lab.options, env: { BIG: "x".repeat(2 * 1024 * 1024) } }), { prefix: lab.prefix }).done;
    expect(result.code).toBe(1);
    expect(result.events).toEqual([{ type: "error", protocolVersion: 1, message: "fd 3 frame larger than 1 MiB (frame 1)" }] as never);
    expect(result.stderr).toBe("paseo-host-runtime: fd 3 frame larger than 1 MiB (frame 1)\n");
  });

  test("garbage after the mux greeting: an error event on fd 4, exit 1", async () => {
    const result = await startExec(`garbage-${TAG}`, envelope(["/bin/true"], { options: lab.options }), { prefix: lab.prefix }).done;
    expect(result.code).toBe(1);
    expect(result.events.map((event) => event.type)).toEqual(["error"]);
    expect((result.events[0] as { message: string }).message).toContain("is not allowed in this direction");
  });
});

describe.skipIf(NO_SSHD)("remote doctor shows the remote host's report escaped", () => {
  test("control characters in a remote check's name and detail reach the terminal as escapes", async () => {
    const result = await runBinary(["remote", "doctor", lab.url, "--ssh-config", lab.configFile]);
    expect(result.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(result.stdout).toContain("remote evil\\x1b]0;owned\\x07");
    expect(result.stdout).toContain("line\\x0afake \\x1b[2J\\u009b31m");
  });
});
