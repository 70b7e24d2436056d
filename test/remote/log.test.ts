/**
 * The local half of a `--remote` call in the local runtime log (issue 18 left it out): every
 * operation carried to a host leaves one line in the daemon-side home's log, with the host's
 * URL (userinfo redacted), the outcome and its duration, and ssh's reason when it failed;
 * never an env value, a lifecycleEnvironment value or URL credentials.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { redactCredentials } from "../../src/redact.ts";
import { runBinary } from "../../kit/binary.ts";
import { PATH, envelope, newExecId } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { tempDir } from "../../kit/scratch.ts";
import { createInput, ok, remoteOp } from "../support/operation.ts";
import { makeRepo } from "../support/git.ts";
import { MARK, killMarked } from "../support/procs.ts";
import { linuxOnly } from "../support/platform.ts";
import { withoutSsh } from "../support/tools.ts";
import { runtimeLogPath } from "../support/store.ts";

/** Set where the tests marked with it cannot run: they need Linux (the tests' own sshd on 127.0.0.1 and /proc). */
const NO_SSHD = linuxOnly("remote/log.test.ts", "the tests' own sshd on 127.0.0.1 and /proc") || withoutSsh("remote/log.test.ts");

setDefaultTimeout(60_000);

type Entry = Record<string, any> & { level: string; event: string };

let lab: SshLab;
let scratch: { path: string; cleanup: () => void };
const WS = `rl-${process.pid}`;
/** Values that must never reach a log file (each at least 6 characters, the scrubbing floor). */
const ENV_SECRET = `envsecret-${process.pid}`;
const LIFECYCLE_SECRET = `lifesecret-${process.pid}`;
const URL_TOKEN = `urltoken-${process.pid}`;
const SECRET_URL = `https://someone:${URL_TOKEN}@example.invalid/team/x.git`;

// Without sshd every block below is skipped, and there is nothing to start or stop.
if (!NO_SSHD) {
  beforeAll(async () => {
    lab = await startSshd();
    scratch = tempDir("phr-remote-log-");
    const repo = makeRepo(join(scratch.path, "repo"));
    ok(await remoteOp(lab, "create", WS, { input: createInput(WS, { kind: "host-directory", path: repo }), options: lab.options }));
  });

  afterAll(async () => {
    killMarked();
    await lab.stop();
    scratch.cleanup();
  });
}

/** The local home's log lines (the remote host's are in lab.remoteHome, a different file). */
function localEntries(): Entry[] {
  const path = runtimeLogPath(lab.localHome);
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
}

function localLogText(): string {
  const path = runtimeLogPath(lab.localHome);
  return existsSync(path) ? readFileSync(path, "utf8") : "";
}

/** The outcome lines (`op` or `exec`) written after `mark` lines. */
function outcomesSince(mark: number): Entry[] {
  return localEntries()
    .slice(mark)
    .filter((entry) => entry.event === "op" || entry.event === "exec");
}

/** A workspace never placed: routed to the `--remote` host (a placed one goes to its recorded host). */
const UNPLACED = `rl-none-${process.pid}`;

/** `--remote` to a port nothing listens on (1), with the lab's program path and ssh config. */
function closedPrefix(): string[] {
  return ["--remote", `ssh://root@127.0.0.1:1${lab.url.slice(lab.url.indexOf("/", 6))}`, "--ssh-config", lab.configFile];
}

describe.skipIf(NO_SSHD)("a remote lifecycle operation", () => {
  test("inspect: one line with the host (no userinfo), status and duration, at debug only (a successful inspect is quiet at info)", async () => {
    let mark = localEntries().length;
    ok(await remoteOp(lab, "inspect", WS, { options: lab.options }));
    expect(outcomesSince(mark)).toEqual([]);
    mark = localEntries().length;
    const options = { ...lab.options, logLevel: "debug", lifecycleEnvironment: { TOKEN: LIFECYCLE_SECRET } };
    const result = await remoteOp(lab, "inspect", WS, { options });
    expect(result.code).toBe(0);
    const [line, ...more] = outcomesSince(mark);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: "debug", event: "op", op: "inspect", workspaceId: WS, status: 0, pid: expect.any(Number), remote: redactCredentials(lab.url) });
    expect(line!.remote).toStartWith("ssh://***@127.0.0.1:");
    expect(typeof line!.durationMs).toBe("number");
    expect(localLogText()).not.toContain(LIFECYCLE_SECRET);
  });

  test("a failing ssh connection: exit 1 as before, and an error line saying ssh's first line of why", async () => {
    const mark = localEntries().length;
    const result = await remoteOp(lab, "inspect", UNPLACED, { options: lab.options }, closedPrefix());
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("Connection refused");
    const [line, ...more] = outcomesSince(mark);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: "error", event: "op", op: "inspect", workspaceId: UNPLACED, status: 1, sshStatus: 255, remote: redactCredentials(closedPrefix()[1]!) });
    expect(line!.message).toContain("Connection refused");
    expect(line!.message).not.toContain("\n");
    // `logs` shows it like a local line, with the reason.
    const shown = await runBinary(["logs", "--home", lab.localHome, "--workspace-id", UNPLACED]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/ERROR inspect rl-none-\d+ pid \d+ on ssh:\/\/\*\*\*@127\.0\.0\.1:1\S*: failed \(exit 1\) in \d+ ms: ssh: connect to host 127\.0\.0\.1 port 1: Connection refused/);
    // Diagnostics name the host without its login.
    expect(shown.stdout).toContain("ssh to ***@127.0.0.1:1 failed (exit 255)");
    expect(localLogText()).not.toContain("root@");
  });

  test("a log that cannot be written changes neither the answer nor the exit code", async () => {
    const logDir = join(lab.localHome, "log");
    const expected = await remoteOp(lab, "inspect", WS, { options: lab.options });
    const before = localLogText();
    chmodSync(logDir, 0o770);
    try {
      const result = await remoteOp(lab, "inspect", WS, { options: { ...lab.options, logLevel: "debug" } });
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(expected.stdout);
      expect(result.stderr).toContain("warning: not writing the runtime log: runtime log directory");
    } finally {
      chmodSync(logDir, 0o700);
    }
    expect(localLogText()).toBe(before);
  });
});

describe.skipIf(NO_SSHD)("a remote exec", () => {
  test("one exec line: exit code from fd 4, ids, host; env values and URL credentials never written (also in the debug spawn line)", async () => {
    const mark = localEntries().length;
    const execId = newExecId();
    const argv = ["/bin/sh", "-c", `exit 7 # ${ENV_SECRET} ${SECRET_URL}`];
    const handle = startExec(WS, envelope(argv, { execId, env: { PATH, TOKEN: ENV_SECRET, ...MARK }, options: { ...lab.options, logLevel: "debug" } }), { prefix: lab.prefix });
    const result = await handle.done;
    expect(result.violation).toBeNull();
    expect(result.code).toBe(7);
    const [line, ...more] = outcomesSince(mark);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: "info", event: "exec", op: "exec", outcome: "exited", workspaceId: WS, execId, code: 7, signal: null, mode: "pipes", remote: redactCredentials(lab.url) });
    expect(typeof line!.durationMs).toBe("number");
    // The workload's pid is the remote host's: the local line claims none.
    expect(line!.workloadPid).toBeUndefined();
    const spawn = localEntries().slice(mark).find((entry) => entry.event === "spawn");
    expect(spawn?.argv).toEqual(["/bin/sh", "-c", "exit 7 # [env TOKEN] https://***@example.invalid/team/x.git"]);
    const text = localLogText();
    expect(text).not.toContain(ENV_SECRET);
    expect(text).not.toContain(URL_TOKEN);
    // `logs --json --workspace-id` has it, exactly as written; `--exec-id` picks it out.
    const json = await runBinary(["logs", "--home", lab.localHome, "--json", "--workspace-id", WS, "--exec-id", execId]);
    const shown = json.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
    expect(shown.filter((entry) => entry.event === "exec")).toEqual([line]);
  });

  test("signal for it (an ended exec: idempotent, ok) is one op line with the signal and both ids", async () => {
    const execId = newExecId();
    const ran = await startExec(WS, envelope(["/bin/true"], { execId, env: { PATH, ...MARK }, options: lab.options }), { prefix: lab.prefix }).done;
    expect(ran.code).toBe(0);
    const mark = localEntries().length;
    const args = ["signal", "--workspace-id", WS, "--exec-id", execId, "--signal", "SIGKILL"];
    const result = await runBinary([...lab.prefix, ...args], { stdin: `${JSON.stringify({ protocolVersion: 1, options: lab.options })}\n` });
    expect(result.code).toBe(0);
    const [line, ...more] = outcomesSince(mark);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: "info", event: "op", op: "signal", workspaceId: WS, execId, signal: "SIGKILL", status: 0, remote: redactCredentials(lab.url) });
  });

  test("a SIGTERM death reported on fd 4 is the line's signal", async () => {
    const mark = localEntries().length;
    const handle = startExec(WS, envelope(["/bin/sh", "-c", "kill -TERM $$"], { env: { PATH, ...MARK }, options: lab.options }), { prefix: lab.prefix });
    const result = await handle.done;
    expect(result.signal).toBe("SIGTERM");
    const [line] = outcomesSince(mark);
    expect(line).toMatchObject({ event: "exec", outcome: "exited", code: null, signal: "SIGTERM" });
  });

  test("a failing ssh connection: exit 1, and a refused line with ssh's reason", async () => {
    const mark = localEntries().length;
    const handle = startExec(UNPLACED, envelope(["/bin/true"], { env: { TOKEN: ENV_SECRET }, options: lab.options }), { prefix: closedPrefix() });
    const result = await handle.done;
    expect(result.code).toBe(1);
    const [line, ...more] = outcomesSince(mark);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: "error", event: "exec", outcome: "refused", status: 1, sshStatus: 255, workspaceId: UNPLACED, remote: redactCredentials(closedPrefix()[1]!) });
    expect(line!.message).toContain("Connection refused");
    expect(localLogText()).not.toContain(ENV_SECRET);
    expect(localLogText()).not.toContain("root@");
  });
});
