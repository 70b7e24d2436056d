/**
 * The operator commands on a `--remote` runtime of the daemon's config.json, as an operator runs
 * them: two "hosts" (two loopback sshd, each with its own runtime home, the second running the
 * binary from another path) behind one runtime, and a third configured host that is down.
 * `new` places like the daemon's create, `ls`/`ps`/`logs` cover every host with a HOST column,
 * `run` streams in pipes and on a PTY through the runtime's own `--remote … exec`, `rm` and
 * `workspace …` go to the recorded host, and a host that does not answer is reported while the
 * others are shown.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hashPlacement } from "../../src/remote/placement.ts";
import { parseSshUrl } from "../../src/ssh-url.ts";
import { BIN, runBinary, type RunResult } from "../../kit/binary.ts";
import { freePort } from "../../kit/ports.ts";
import { PATH as WORKLOAD_PATH } from "../../kit/envelope.ts";
import { oneCommitRepo } from "../support/git.ts";
import { linuxOnly } from "../support/platform.ts";
import { until, untilNone } from "../support/poll.ts";
import { cmdlineOf, environOf, processesWith } from "../support/procs.ts";
import { tempDir } from "../../kit/scratch.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { missingTools, withoutSsh } from "../support/tools.ts";

/** Set where this file cannot run: the tests' own sshd on 127.0.0.1 and /proc are Linux's. */
const NO_SSHD = linuxOnly("operator/remote-runtime.test.ts", "the tests' own sshd on 127.0.0.1 and /proc") || withoutSsh("operator/remote-runtime.test.ts");
const NO_TMUX = NO_SSHD || missingTools("remote-runtime.test.ts, run --pty under tmux", ["tmux"]).length > 0;

setDefaultTimeout(90_000);

/** The workload's PATH, as a `run --env` entry. */
const PATH_ENTRY = `PATH=${WORKLOAD_PATH}`;
/** Every workload here carries it, so a leftover can be found and ended. */
const MARK = `PHR_REMOTE_RUNTIME_TEST=${process.pid}`;

let a: SshLab;
let b: SshLab;
/** A host whose "paseo-host-runtime" prints what a test writes in `answers` (ls.json, ps.json, version, doctor.json). */
let c: SshLab;
let answers: string;
let scratch: { path: string; cleanup: () => void };
let config: string;
let repo: string;
let env: Record<string, string>;
let deadUrl: string;
const children: Bun.Subprocess[] = [];

// Without sshd every test here is skipped, and there is nothing to start or stop.
if (!NO_SSHD) beforeAll(async () => {
  scratch = tempDir("phr-remote-runtime-");
  // Host b runs the binary from another path, as a separately installed machine would.
  mkdirSync(join(scratch.path, "opt"));
  const otherBinary = join(scratch.path, "opt", "paseo-host-runtime");
  symlinkSync(BIN, otherBinary);
  answers = join(scratch.path, "answers");
  mkdirSync(answers);
  const forger = join(scratch.path, "opt", "forger");
  writeFileSync(forger, `#!/bin/sh\ncase "$1" in ls|ps|doctor) cat '${answers}'/"$1".json;; --version) cat '${answers}'/version;; *) echo "forger: $1" >&2; exit 3;; esac\n`, { mode: 0o755 });
  a = await startSshd(BIN);
  b = await startSshd(otherBinary, a);
  c = await startSshd(forger, a);
  deadUrl = `ssh://root@127.0.0.1:${await freePort()}/opt/paseo-host-runtime`;
  repo = oneCommitRepo(join(scratch.path, "repo"));
  const command = [BIN, "--remote", a.url, "--ssh-config", a.configFile];
  // Each host keeps its own default home (its sshd sets PASEO_HOST_RUNTIME_HOME); this side's home is a's lab's.
  const options = (hosts: string[]) => ({ stateDirectory: a.localHome, ...(a.options.cgroupRoot ? { cgroupRoot: a.options.cgroupRoot } : {}), remote: { hosts, connectTimeoutSeconds: 5, idleTimeoutSeconds: 8 } });
  const paseoHome = join(scratch.path, "paseo");
  mkdirSync(paseoHome);
  config = join(paseoHome, "config.json");
  writeFileSync(
    config,
    JSON.stringify({
      workspaceRuntimes: {
        rem: { type: "command", command, options: options([b.url]) },
        down: { type: "command", command, options: options([b.url, deadUrl]) },
        // Host a alone, then the same runtime edited: host b added, another stop grace (so another configuration on the hosts).
        solo: { type: "command", command, options: { ...options([b.url]), stopTimeoutMs: 4000, remote: { connectTimeoutSeconds: 5, idleTimeoutSeconds: 8 } } },
        edited: { type: "command", command, options: { ...options([b.url]), stopTimeoutMs: 5000 } },
        // solo from another local home: the hosts hold its workspaces, this side's home no placement of them.
        elsewhere: { type: "command", command, options: { ...options([b.url]), stateDirectory: join(scratch.path, "other-home"), stopTimeoutMs: 4000, remote: { connectTimeoutSeconds: 5, idleTimeoutSeconds: 8 } } },
        forged: { type: "command", command: [BIN, "--remote", c.url, "--ssh-config", a.configFile], options: { stateDirectory: join(scratch.path, "forged-home"), remote: { connectTimeoutSeconds: 5 } } },
      },
    }),
  );
  mkdirSync(join(scratch.path, "user"));
  env = { HOME: join(scratch.path, "user"), XDG_STATE_HOME: join(scratch.path, "user", "state"), PASEO_HOST_RUNTIME_HOME: join(scratch.path, "no-home"), PASEO_HOME: paseoHome, LC_ALL: "C.UTF-8", NO_COLOR: "" };
});

if (!NO_SSHD) afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const pid of marked()) process.kill(pid, "SIGKILL");
  await c.stop();
  await b.stop();
  await a.stop();
  scratch.cleanup();
});

/** Pids of live processes carrying MARK in their environment. */
function marked(): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      const [key, value] = MARK.split("=") as [string, string];
      return environOf(pid)[key] === value;
    });
}

/** An operator command on runtime `runtime` of the config (default: the two-host one). */
function op(args: string[], runtime = "rem", stdin?: string | Uint8Array): Promise<RunResult> {
  const end = args.indexOf("--");
  const select = ["--config", config, "--runtime", runtime];
  const line = end === -1 ? [...args, ...select] : [...args.slice(0, end), ...select, ...args.slice(end)];
  return runBinary(line, { env, ...(stdin === undefined ? {} : { stdin }) });
}

/** Starts `run` of the config's runtime in the background (stdin closed), its output collected. */
function startRun(workspaceId: string, argv: string[]) {
  const proc = Bun.spawn([BIN, "run", "-w", workspaceId, "--config", config, "--runtime", "rem", "-e", PATH_ENTRY, "-e", MARK, "--", ...argv], { env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  children.push(proc);
  const output = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { proc, done: output.then(([stdout, stderr]) => ({ stdout, stderr, code: proc.exitCode, signal: proc.signalCode })) };
}

const hostKey = (lab: SshLab) => parseSshUrl(lab.url).key;

/** A workspace id the runtime's hash places on `lab` (of hosts a and b). */
function idOn(lab: SshLab, prefix: string): string {
  const hosts = [parseSshUrl(a.url), parseSshUrl(b.url)];
  for (let i = 0; ; i++) if (hashPlacement(hosts, `${prefix}-${i}`).key === hostKey(lab)) return `${prefix}-${i}`;
}

/** The workspace ids in a host's own runtime home, read there directly (not through the runtime). */
async function onHost(lab: SshLab): Promise<string[]> {
  const listed = await runBinary(["ls", "--json", "--home", lab.remoteHome], { env });
  if (listed.code !== 0) return [];
  return (JSON.parse(listed.stdout).workspaces as { workspaceId: string }[]).map((w) => w.workspaceId).sort();
}

/** The data lines of a table whose first column is HOST, as [host, workspace, …cells]. */
function tableRows(stdout: string): string[][] {
  const [header, ...rows] = stdout.trimEnd().split("\n");
  expect(header).toMatch(/^HOST {2,}WORKSPACE /);
  return rows.filter((row) => !row.startsWith("!") && /^\S+ {2,}/.test(row)).map((row) => row.split(/ {2,}/));
}

describe.skipIf(NO_SSHD)("a --remote runtime of the daemon's config, by hand", () => {
  let wa: string;
  let wb: string;

  test("new places each workspace as the daemon's create does, on its host, and names the host", async () => {
    wa = idOn(a, "wa");
    wb = idOn(b, "wb");
    for (const [id, lab] of [[wa, a], [wb, b]] as const) {
      const made = await op(["new", "-w", id, "--source", repo]);
      expect(made.code).toBe(0);
      expect(made.stdout).toContain(`workspace ${id} is ready\n  host         ${hostKey(lab)}\n`);
      expect(made.stdout).toContain(`next: paseo-host-runtime run --workspace-id ${id} --config ${config} --runtime rem -- COMMAND...`);
    }
    expect(await onHost(a)).toEqual([wa]);
    expect(await onHost(b)).toEqual([wb]);
    const adopt = await op(["new", "-w", "nope", "--source", repo, "--host-directory", "adopt"]);
    expect(adopt.code).toBe(2);
    expect(adopt.stderr).toContain("--host-directory: a remote runtime always clones");
  });

  test("ls lists every host's workspaces with a HOST column; --json names each one's host", async () => {
    const listed = await op(["ls"]);
    expect(listed.stderr).toBe("");
    expect(listed.code).toBe(0);
    const rows = tableRows(listed.stdout);
    expect(rows.map(([host, id]) => [host, id])).toEqual([
      [hostKey(a), wa],
      [hostKey(b), wb],
    ]);
    // Each host stamps the hosts' owner: <owner>@<this machine>.
    expect(rows[0]![2]).toMatch(/^default@/);
    const json = JSON.parse((await op(["ls", "--json"])).stdout);
    expect(json.hosts).toEqual([
      { host: a.url, home: a.remoteHome, exists: true, error: null },
      { host: b.url, home: b.remoteHome, exists: true, error: null },
    ]);
    expect(json.workspaces.map((w: { host: string; workspaceId: string; status: string }) => [w.host, w.workspaceId, w.status])).toEqual([
      [a.url, wa, "ready"],
      [b.url, wb, "ready"],
    ]);
  });

  test("run streams in pipes as locally: exact bytes both ways, stderr, the exit status, on the workspace's own host", async () => {
    const data = new Uint8Array(256 * 1024 + 3);
    crypto.getRandomValues(data.subarray(0, 65536));
    data.set([0, 0xff, 0x0a], 1000);
    const proc = Bun.spawn([BIN, "run", "-w", wb, "--config", config, "--runtime", "rem", "--", "/bin/cat"], { env: { ...process.env, ...env }, stdin: new Blob([data]), stdout: "pipe", stderr: "pipe" });
    children.push(proc);
    const [out, err] = await Promise.all([new Response(proc.stdout).arrayBuffer(), new Response(proc.stderr).text(), proc.exited]);
    expect(err).toBe("");
    expect(proc.exitCode).toBe(0);
    expect(Buffer.from(out).equals(Buffer.from(data))).toBe(true);
    const status = await op(["run", "-w", wa, "-e", PATH_ENTRY, "--", "sh", "-c", "pwd; echo err >&2; exit 3"]);
    expect(status.code).toBe(3);
    expect(status.stderr).toBe("err\n");
    // The workspace's cwd is on host a, in a's own home.
    expect(status.stdout.startsWith(a.remoteHome)).toBe(true);
    expect((await op(["run", "-w", wb, "--", "/bin/pwd"])).stdout.startsWith(b.remoteHome)).toBe(true);
  });

  test("ps covers both hosts with a HOST column; rm refuses live work on the recorded host; pause, inspect and resume go there", async () => {
    const onA = startRun(wa, ["sleep", "301"]);
    const onB = startRun(wb, ["sleep", "302"]);
    const listed = await until("both executions in ps", async () => {
      const json = JSON.parse((await op(["ps", "--json"])).stdout);
      return json.executions.length === 2 && json.executions.every((e: { state: string }) => e.state === "running") ? json : undefined;
    });
    expect(listed.executions.map((e: { host: string; workspaceId: string; argv: string[] }) => [e.host, e.workspaceId, e.argv])).toEqual([
      [a.url, wa, ["sleep", "301"]],
      [b.url, wb, ["sleep", "302"]],
    ]);
    const table = await op(["ps"]);
    expect(table.code).toBe(0);
    expect(tableRows(table.stdout).map((row) => [row[0], row[1], row.at(-1)])).toEqual([
      [hostKey(a), wa, "sleep 301"],
      [hostKey(b), wb, "sleep 302"],
    ]);
    const formatted = await op(["ps", "-w", wb, "--format", "{{.host}} {{.workspaceId}} {{.command}}"]);
    expect(formatted.stdout).toBe(`${hostKey(b)} ${wb} sleep 302\n`);

    const refused = await op(["rm", "-w", wa]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`rm: workspace "${wa}" on ${hostKey(a)} has 1 live execution(s)`);
    expect(await onHost(a)).toEqual([wa]);

    const paused = await op(["workspace", "pause", "-w", wa]);
    expect(paused.code).toBe(0);
    expect(paused.stdout).toStartWith(`workspace ${wa} is paused on ${hostKey(a)} (1 live execution(s) were stopped)`);
    // The workload got SIGTERM on host a; run mirrors it.
    expect((await onA.done).signal).toBe("SIGTERM");
    const inspected = await op(["workspace", "inspect", "-w", wa]);
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toStartWith(`workspace ${wa} is paused\n  host         ${hostKey(a)}\n  cwd          ${a.remoteHome}`);
    expect(JSON.parse((await op(["workspace", "inspect", "-w", wa, "--json"])).stdout).inspection.status).toBe("paused");
    // The other host's execution is untouched.
    expect(JSON.parse((await op(["ps", "--json"])).stdout).executions.map((e: { workspaceId: string }) => e.workspaceId)).toEqual([wb]);
    const resumed = await op(["workspace", "resume", "-w", wa]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toStartWith(`workspace ${wa} is ready\n  host         ${hostKey(a)}\n`);
    process.kill(onB.proc.pid, "SIGTERM");
    expect((await onB.done).signal).toBe("SIGTERM");
  });

  test("logs merges every host's log and this side's lines of the runtime's calls, each with its host", async () => {
    const shown = await op(["logs", "-w", wb]);
    expect(shown.code).toBe(0);
    const lines = shown.stdout.trimEnd().split("\n");
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(line).toMatch(new RegExp(`^(${hostKey(b).replaceAll(".", "\\.")}|local) {2,}\\d{4}-`));
    expect(lines.some((line) => line.startsWith(hostKey(b)) && line.includes(` create ${wb} `))).toBe(true);
    expect(lines.some((line) => line.startsWith("local ") && line.includes(` create ${wb} `) && line.includes(" on ssh://"))).toBe(true);
    const json = (await op(["logs", "--json"])).stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { host: string | null; workspaceId?: string; time: string });
    expect(new Set(json.map((entry) => entry.host))).toEqual(new Set([a.url, b.url, null]));
    expect(json.filter((entry) => entry.host === a.url).every((entry) => entry.workspaceId === undefined || entry.workspaceId === wa)).toBe(true);
    // Merged by time.
    expect(json.map((entry) => entry.time)).toEqual(json.map((entry) => entry.time).sort());
  });

  test("logs --follow shows new lines of a host as they come, and ends its remote half when it is stopped", async () => {
    const follow = Bun.spawn([BIN, "logs", "--follow", "-w", wb, "--config", config, "--runtime", "rem"], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
    children.push(follow);
    let seen = "";
    void (async () => {
      for await (const chunk of follow.stdout) seen += new TextDecoder().decode(chunk);
    })();
    await until("the backlog", () => seen.includes(` create ${wb} `));
    expect((await op(["run", "-w", wb, "--", "/bin/echo", "followed"])).code).toBe(0);
    await until("the new exec line from host b", () => seen.split("\n").some((line) => line.startsWith(hostKey(b)) && line.includes(` exec ${wb} `) && line.includes("exited 0")));
    // The host's own `logs --follow` (the remote binary; a shared ssh connection may outlive it, by design).
    const remoteHalf = () => processesWith("--follow").filter((pid) => pid !== follow.pid && cmdlineOf(pid).split("\0")[0]!.endsWith("paseo-host-runtime") && cmdlineOf(pid).includes(wb));
    expect(remoteHalf().length).toBeGreaterThan(0);
    follow.kill("SIGTERM");
    await follow.exited;
    // ssh's side and the host's `logs --follow` end with the session (a keepalive finds it gone).
    expect(await untilNone(remoteHalf, 20_000)).toEqual([]);
  });

  test.skipIf(NO_TMUX)("run --pty under a real terminal (tmux): the size, a resize, keys and Ctrl-C reach the workload on its host; the terminal is restored", async () => {
    const socket = join(scratch.path, "tmux.sock");
    const tmux = (...args: string[]) => Bun.spawnSync(["tmux", "-S", socket, "-f", "/dev/null", ...args], { env: { ...process.env, ...env } });
    const rcFile = join(scratch.path, "pty-rc");
    const sttyFile = join(scratch.path, "pty-stty");
    const script = join(scratch.path, "pty.sh");
    const workload = 'stty size; tty; read line; echo "line=$line"; stty size; exec sleep 30';
    writeFileSync(
      script,
      `'${BIN}' run --pty --workspace-id ${wa} --config '${config}' --runtime rem --env ${PATH_ENTRY} --env ${MARK} -- sh -c '${workload}'\nrc=$?\nstty -a > '${sttyFile}'\necho "rc=$rc" > '${rcFile}'\nsleep 30\n`,
    );
    const pane = () => tmux("capture-pane", "-p", "-t", "op").stdout.toString();
    try {
      expect(tmux("new-session", "-d", "-s", "op", "-x", "100", "-y", "30", `sh '${script}'`).exitCode).toBe(0);
      await until("the initial size", () => (pane().includes("30 100") ? true : undefined), 20_000);
      // `tty` on the remote side: fd 0 is a terminal there.
      await until("the terminal's name", () => /\/dev\/pts\/\d+/.test(pane()) || undefined);
      expect(tmux("resize-window", "-t", "op", "-x", "120", "-y", "40").exitCode).toBe(0);
      await Bun.sleep(300);
      tmux("send-keys", "-t", "op", "hello", "Enter");
      await until("the new size", () => (pane().includes("40 120") ? true : undefined), 20_000);
      expect(pane()).toContain("line=hello");
      tmux("send-keys", "-t", "op", "C-c");
      const rc = await until(
        "run to end",
        () => {
          try {
            return readFileSync(rcFile, "utf8");
          } catch {
            return undefined;
          }
        },
        20_000,
      );
      // The ^C byte became SIGINT on the remote terminal; sleep died by it, and run by it too: 128 + 2.
      expect(rc).toBe("rc=130\n");
      const stty = readFileSync(sttyFile, "utf8");
      expect(stty).toMatch(/(^|\s)icanon(\s|$)/m);
      expect(stty).toMatch(/(^|\s)echo(\s|$)/m);
    } finally {
      tmux("kill-server");
    }
  });

  test("a host that does not answer is named on stderr, exit 1, and the others are still shown", async () => {
    const dead = deadUrl.replace("ssh://root@", "ssh://***@");
    const listed = await op(["ls"], "down");
    expect(listed.code).toBe(1);
    expect(listed.stderr).toContain(`paseo-host-runtime: ls: ${dead}: not reached over ssh (exit 255`);
    expect(tableRows(listed.stdout).map(([host, id]) => [host, id])).toEqual([
      [hostKey(a), wa],
      [hostKey(b), wb],
    ]);
    const json = JSON.parse((await op(["ps", "--json"], "down")).stdout);
    expect(json.hosts.map((h: { host: string; error: string | null }) => [h.host, h.error === null])).toEqual([
      [a.url, true],
      [b.url, true],
      [deadUrl, false],
    ]);
    const logged = await op(["logs", "-w", wa], "down");
    expect(logged.code).toBe(1);
    expect(logged.stderr).toContain(`logs: ${dead}: not reached over ssh`);
    expect(logged.stdout).toContain(` create ${wa} `);
    // A workspace the runtime routes to the dead host: rm cannot see it there, and changes nothing.
    const hosts = [parseSshUrl(a.url), parseSshUrl(b.url), parseSshUrl(deadUrl)];
    let id = "lost-0";
    for (let i = 0; hashPlacement(hosts, id).key !== hosts[2]!.key; i++) id = `lost-${i}`;
    const removed = await op(["rm", "-w", id], "down");
    expect(removed.code).toBe(1);
    expect(removed.stderr).toContain(`rm: cannot see workspace "${id}" on ${dead}: not reached over ssh`);
    expect(removed.stderr).toContain("nothing was changed");
    const doctor = await op(["doctor", "--json"], "down");
    expect(doctor.code).toBe(1);
    const report = JSON.parse(doctor.stdout) as { ok: boolean; hosts: { host: string; ok: boolean; checks: { name: string; status: string }[] }[] };
    expect(report.hosts.map((h) => h.host)).toEqual([a.url, b.url, deadUrl]);
    expect(report.hosts[2]!.checks.find((check) => check.name === "ssh connection")?.status).toBe("fail");
    for (const host of report.hosts.slice(0, 2)) expect(host.checks.find((check) => check.name === "ssh connection")?.status).toBe("ok");
  });

  test("--remote before the command, and --runtime alone (the daemon's default config), select the runtime too", async () => {
    const inline = JSON.stringify({ stateDirectory: a.localHome, remote: { hosts: [b.url] } });
    const listed = await runBinary(["--remote", a.url, "--ssh-config", a.configFile, "ls", "--options-json", inline], { env });
    expect(listed.code).toBe(0);
    expect(tableRows(listed.stdout).map(([host, id]) => [host, id])).toEqual([
      [hostKey(a), wa],
      [hostKey(b), wb],
    ]);
    const both = await runBinary(["--remote", a.url, "ls", "--config", config], { env });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--remote before the command already names the runtime");
    const check = await runBinary(["--remote", a.url, "config", "check"], { env });
    expect(check.code).toBe(2);
    // PASEO_HOME holds config.json: --runtime alone reads it.
    const byName = await runBinary(["ps", "-q", "--runtime", "rem"], { env });
    expect(byName.stderr).toBe("");
    expect(byName.code).toBe(0);
    // No selection and no home: it says --config exists, and which runtimes the default config has.
    const unselected = await runBinary(["ls"], { env });
    expect(unselected.code).toBe(1);
    expect(unselected.stderr).toBe(
      `paseo-host-runtime: runtime home ${env.PASEO_HOST_RUNTIME_HOME} does not exist (nothing was ever created there; check --home, options.stateDirectory or PASEO_HOST_RUNTIME_HOME, or take the daemon's runtime with --config FILE --runtime NAME (${config} has "rem", "down", "solo", "edited", "elsewhere", "forged"))\n`,
    );
  });

  test("a host's answers are other people's bytes: escaped on the terminal, and refused when not valid UTF-8 or not the schema", async () => {
    const row = (root: string) => ({
      workspaceId: "forged",
      owner: "x",
      dialect: "seed",
      runtimeInstanceId: null,
      configuration: null,
      status: "ready",
      interrupted: false,
      unfinishedDestroy: null,
      listedAt: "2026-01-01T00:00:00.000Z",
      orphanedAt: null,
      source: "git",
      placement: "existing",
      kind: "clone",
      root,
      problem: null,
      liveExecutions: 0,
      cgroup: null,
      memoryCurrent: null,
      pidsCurrent: null,
      createdAt: "2026-01-01T00:00:00.000Z",
      isolation: { isolation: "none" },
    });
    writeFileSync(join(answers, "ls.json"), JSON.stringify({ home: "/h", workspaces: [row("/w\u001b[2J\nINFO forged line\u009b")] }));
    const shown = await op(["ls"], "forged");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("/w\\x1b[2J\\x0aINFO forged line\\u009b");
    expect(shown.stdout).not.toMatch(/[\u001b\u009b]/);
    expect(shown.stdout.split("\n").filter((line) => line.startsWith("INFO"))).toEqual([]);
    const json = await op(["ls", "--json"], "forged");
    expect(json.stdout).not.toMatch(/[\u001b\u009b]/);
    expect(JSON.parse(json.stdout).workspaces[0].root).toBe("/w\u001b[2J\nINFO forged line\u009b");

    writeFileSync(join(answers, "ls.json"), Buffer.concat([Buffer.from('{"home":"/h'), Buffer.from([0xff]), Buffer.from('","workspaces":[]}')]));
    const invalid = await op(["ls"], "forged");
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain(`ls: ${c.url.replace("ssh://root@", "ssh://***@")}: invalid ls --json of ${hostKey(c)}: not valid UTF-8`);
    writeFileSync(join(answers, "ls.json"), JSON.stringify({ home: "/h", workspaces: [{ ...row("/w"), liveExecutions: "many" }] }));
    const typed = await op(["ls"], "forged");
    expect(typed.code).toBe(1);
    expect(typed.stderr).toContain(`invalid ls --json of ${hostKey(c)}`);
    expect(typed.stdout).not.toContain("forged  ");
    // A host's stderr is not relayed: its failure is one escaped line.
    const other = await op(["logs"], "forged");
    expect(other.code).toBe(1);
    expect(other.stderr).toBe(`paseo-host-runtime: logs: ${c.url.replace("ssh://root@", "ssh://***@")}: forger: logs\n`);
  });

  test("a host's doctor report is other people's bytes too: every line of doctor escaped, its last line included", async () => {
    const version = (await runBinary(["--version"], { env })).stdout.split("\n")[0];
    writeFileSync(join(answers, "version"), `${version}\n`);
    writeFileSync(join(answers, "doctor.json"), JSON.stringify({ ok: false, checks: [{ name: "git\u001b]0;owned\u0007", status: "fail", detail: "forged\u009b", hint: "apt-get install git" }] }));
    const shown = await op(["doctor"], "forged");
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain("remote git\\x1b]0;owned\\x07");
    expect(shown.stdout).toMatch(/required check\(s\) failed: .*remote git\\x1b\]0;owned\\x07$/m);
    expect(shown.stdout).not.toMatch(/[\u001b\u0007\u009b]/);
    // Its fix is for that host: pasted here it would change this machine.
    expect(shown.stdout).toContain(`fix: apt-get install git   # on ${hostKey(c)}, not here\n`);
    const direct = await runBinary(["remote", "doctor", c.url, "--ssh-config", a.configFile], { env });
    expect(direct.code).toBe(1);
    expect(direct.stdout).toMatch(/required check\(s\) failed: remote git\\x1b\]0;owned\\x07$/m);
    expect(direct.stdout).not.toMatch(/[\u001b\u0007\u009b]/);
  });

  test("workspace reconcile and orphans go through the runtime's own operations on every host", async () => {
    const extra = idOn(b, "wx");
    expect((await op(["new", "-w", extra, "--source", repo])).code).toBe(0);
    const keptAll = await op(["workspace", "reconcile", "--keep-all", "--json"]);
    expect(keptAll.code).toBe(0);
    expect(JSON.parse(keptAll.stdout).destroyed).toEqual([]);
    const reconciled = await op(["workspace", "reconcile", "--keep", wa, "--keep", wb, "--json"]);
    expect(reconciled.code).toBe(0);
    expect(JSON.parse(reconciled.stdout)).toMatchObject({ kept: [wa, wb], destroyed: [extra] });
    expect(await onHost(b)).toEqual([wb]);
    expect(await onHost(a)).toEqual([wa]);
    const orphans = await op(["orphans"]);
    expect(orphans.code).toBe(0);
    expect(orphans.stdout).toMatch(/^no orphans of owner "default@/);
  });

  test("workspace reconcile --keep-all typed as a bare `paseo-host-runtime` (another argv[0] than the runtime's command) keeps every workspace", async () => {
    const id = idOn(a, "typed");
    expect((await op(["new", "-w", id, "--source", repo])).code).toBe(0);
    const typed = Bun.spawn([BIN, "workspace", "reconcile", "--keep-all", "--json", "--config", config, "--runtime", "rem"], { argv0: "paseo-host-runtime", env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr] = await Promise.all([new Response(typed.stdout).text(), new Response(typed.stderr).text()]);
    await typed.exited;
    expect({ code: typed.exitCode, stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(stdout).kept).toContain(id);
    expect(await onHost(a)).toContain(id);
    expect((await op(["rm", "-w", id])).code).toBe(0);
  });

  test("orphans --remove reaches an orphan on the host its placement records, though its hash host is another", async () => {
    // Made while the fleet was host a alone: both live on a, though the hash over a and b says b.
    const [kept, orphan] = [idOn(b, "ok"), idOn(b, "oo")];
    for (const id of [kept, orphan]) expect((await op(["new", "-w", id, "--source", repo], "solo")).code).toBe(0);
    expect((await op(["workspace", "reconcile", "--keep", kept], "edited")).code).toBe(0);
    const removed = await op(["orphans", "--remove", "--json"], "edited");
    expect(removed.stderr).toBe("");
    expect(JSON.parse(removed.stdout).orphans).toMatchObject([{ host: a.url, workspaceId: orphan, outcome: "removed" }]);
    expect(removed.code).toBe(0);
    expect(await onHost(a)).toEqual([wa, kept].sort());
    expect((await op(["rm", "-w", kept], "edited")).code).toBe(0);
    expect(await onHost(a)).toEqual([wa]);
  });

  test("orphans --remove leaves an orphan whose placement this side's home does not hold (exit 1), and says why", async () => {
    // Made through another local home while the fleet was host a: both on a, one whose hash host is b.
    const [kept, orphan] = [idOn(a, "ek"), idOn(b, "eo")];
    for (const id of [kept, orphan]) expect((await op(["new", "-w", id, "--source", repo], "elsewhere")).code).toBe(0);
    expect((await op(["workspace", "reconcile", "--keep", kept], "edited")).code).toBe(0);
    const left = await op(["orphans", "--remove"], "edited");
    expect(left.code).toBe(1);
    expect(left.stdout).toContain(`  failed: ${orphan} on ${a.url} (`);
    expect(left.stdout).toContain(`: no placement of it in home ${a.localHome}, so the runtime's operations would go to ${hostKey(b)}`);
    expect(await onHost(a)).toEqual([wa, kept, orphan].sort());
    for (const id of [kept, orphan]) expect((await op(["rm", "-w", id], "elsewhere")).code).toBe(0);
    expect(await onHost(a)).toEqual([wa]);
  });

  test("rm goes to the recorded host: each workspace is destroyed where it lives, the other host untouched", async () => {
    const first = await op(["rm", "-w", wb, "--json"]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ workspaceId: wb, existed: true, destroyed: true, stoppedExecutions: 0 });
    expect(await onHost(b)).toEqual([]);
    expect(await onHost(a)).toEqual([wa]);
    const second = await op(["rm", "-w", wa]);
    // A remote runtime clones a host directory on its host: what rm removed there is said.
    expect(second.stdout).toMatch(new RegExp(`^workspace ${wa} destroyed on ${hostKey(a).replaceAll(".", "\\.")}: its (clone|copy) /\\S+ removed\n$`));
    expect(await onHost(a)).toEqual([]);
    // A person's rm of an id the host does not have is a mistake, said so (exit 1); --force accepts it, as the protocol's destroy does.
    const again = await op(["rm", "-w", wa]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`rm: no workspace "${wa}" of owner `);
    expect(again.stderr).toContain(` on ${hostKey(a)}; nothing was changed. `);
    const forced = await op(["rm", "-w", wa, "--force"]);
    expect(forced.stdout).toBe(`workspace ${wa} did not exist on ${hostKey(a)}; nothing to do\n`);
  });

  test("a host of another version: new and run say so before they use it, and the fix pastes here (its ssh config, a site the host reaches)", async () => {
    const ours = (await runBinary(["--version"], { env })).stdout.split(" ")[1]!;
    writeFileSync(join(answers, "version"), "paseo-host-runtime 0.0.1 (linux-x64, bun 1.0.0)\n");
    const host = parseSshUrl(c.url);
    const ssh = `ssh -F ${a.configFile} -p ${host.port} ${host.user}@${host.host}`;
    const script = /^\d+\.\d+\.\d+/.test(ours) ? `download/v${ours}/install.sh | sh -s -- --version ${ours}` : "latest/download/install.sh | sh -s --";
    const fix = `${ssh} 'curl -fsSL https://github.com/getpaseo/paseo-host-runtime/releases/${script}'`;
    const warning = `paseo-host-runtime: new: warning: ${hostKey(c)} runs "paseo-host-runtime 0.0.1 (linux-x64, bun 1.0.0)", this side is ${ours}: the daemon does not check, and a protocol change between them fails its calls; install the same version there: ${fix}   # install this version there\n`;
    const made = await op(["new", "-w", "mismatched", "--source", repo], "forged");
    expect(made.stderr).toStartWith(warning);
    const ran = await op(["run", "-w", "mismatched", "--", "/bin/true"], "forged");
    expect(ran.stderr).toStartWith(warning.replace(": new: ", ": run: "));
    // doctor's fix line is the same; from a file:// mirror (a directory on this machine) the release is shipped over that ssh.
    const doctor = await op(["doctor"], "forged");
    expect(doctor.stdout).toContain(`fix: ${fix}   # install this version there\n`);
    const mirrored = await runBinary(["remote", "doctor", c.url, "--ssh-config", a.configFile], { env: { ...env, PASEO_HOST_RUNTIME_BASE_URL: "file:///srv/paseo-mirror" } });
    if (/^\d+\.\d+\.\d+/.test(ours)) {
      const there = `d="$HOME/.cache/paseo-host-runtime/mirror" && mkdir -p "$d" && tar -C "$d" -xf - && PASEO_HOST_RUNTIME_BASE_URL="file://$d" sh "$d/download/v${ours}/install.sh" --version ${ours}`;
      expect(mirrored.stdout).toContain(`fix: tar -C /srv/paseo-mirror -cf - download/v${ours} | ${ssh} '${there}'   # ships this side's release (file:///srv/paseo-mirror) there and installs it\n`);
    }
    expect(mirrored.stdout).not.toContain("curl -fsSL file:");
  });

  test("nothing this file started is left running", async () => {
    expect(await untilNone(marked)).toEqual([]);
  });
});
