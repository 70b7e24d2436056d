import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { missingTools } from "../support/tools.ts";
import { BIN } from "../../kit/binary.ts";
import { background, runIn, sandbox, teardown, type Ended, type Sandbox } from "../support/operator.ts";
import { until } from "../support/poll.ts";
import { PATH } from "../../kit/envelope.ts";

/** `--env` giving the workload the tests' PATH. */
const PATH_ENV = `PATH=${PATH}`;
let box: Sandbox;
let workspace: string;

beforeAll(async () => {
  box = sandbox();
  workspace = join(box.dir, "project");
  mkdirSync(join(workspace, "sub"), { recursive: true });
  const made = await runIn(box, ["new", "--workspace-id", "w", "--source", workspace, "--home", box.home, ...box.cgroupArgs]);
  if (made.code !== 0) throw new Error(`new failed: ${made.stderr}`);
});

afterAll(() => teardown(box, ["w"]));

/** Starts `run` in workspace w with piped stdio; `stdin` is written then closed (or left open with `keepStdin`). */
function start(args: string[], stdin?: string | Uint8Array, keepStdin = false) {
  return background(box, ["run", "--workspace-id", "w", "--home", box.home, ...box.cgroupArgs, ...args], stdin, keepStdin);
}

function run(args: string[], stdin?: string | Uint8Array): Promise<Ended> {
  return start(args, stdin).done;
}

describe("run, pipes mode", () => {
  test("the workload's stdout carries exactly its bytes (1 MiB with NUL and 0xff) and stdin EOF reaches it", async () => {
    const data = new Uint8Array(1024 * 1024 + 5);
    crypto.getRandomValues(data.subarray(0, 65536));
    data.set([0, 0xff, 0x0a], 100);
    const result = await run(["--", "/bin/cat"], data);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.equals(Buffer.from(data))).toBe(true);
  });

  test("exit code and stderr are the workload's", async () => {
    const result = await run(["--env", PATH_ENV, "--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
    expect(result).toMatchObject({ code: 3, signal: null, stderr: "err\n" });
    expect(result.stdout.toString()).toBe("out\n");
  });

  test("a workload killed by a signal makes run die by the same signal", async () => {
    const result = await run(["--env", PATH_ENV, "--", "sh", "-c", "kill -TERM $$"]);
    expect(result.signal).toBe("SIGTERM");
    expect(result.code).toBeNull();
  });

  test("the env is empty unless --env / --inherit-env; --env wins over inherited values", async () => {
    expect((await run(["--", "/usr/bin/env"])).stdout.toString()).toBe("");
    expect((await run(["--env", "A=1", "--env", "B=x=y", "--", "/usr/bin/env"])).stdout.toString()).toBe("A=1\nB=x=y\n");
    const inherited = (await run(["--inherit-env", "--env", "HOME=/nowhere", "--", "/usr/bin/env"])).stdout.toString();
    expect(inherited).toContain(`XDG_STATE_HOME=${box.env.XDG_STATE_HOME}\n`);
    expect(inherited).toContain("HOME=/nowhere\n");
  });

  test("--cwd is workspace-relative; an escape is refused before anything runs", async () => {
    expect((await run(["--cwd", "sub", "--", "/bin/pwd"])).stdout.toString()).toBe(`${join(workspace, "sub")}\n`);
    const escaped = await run(["--cwd", "../..", "--", "/bin/pwd"]);
    expect(escaped.code).toBe(1);
    expect(escaped.stdout.toString()).toBe("");
    expect(escaped.stderr).not.toBe("");
  });

  test("SIGINT to run reaches the workload once (it traps it and exits 5)", async () => {
    const handle = start(["--env", PATH_ENV, "--", "sh", "-c", 'n=0; trap "n=$((n+1))" INT; echo ready; while [ $n -eq 0 ]; do sleep 0.02; done; sleep 0.2; echo "ints=$n"; exit 5'], undefined);
    await until("ready", () => (handle.stdoutText().includes("ready") ? true : undefined));
    handle.proc.kill("SIGINT");
    const result = await handle.done;
    expect(result.code).toBe(5);
    expect(result.stdout.toString()).toBe("ready\nints=1\n");
  });

  test("a program not on the (empty) PATH exits 127 with a hint", async () => {
    const result = await run(["--", "sh", "-c", "true"]);
    expect(result.code).toBe(127);
    expect(result.stderr).toContain('program "sh" not found');
    expect(result.stderr).toContain("add --env PATH=/usr/bin:/bin, --inherit-env, or give an absolute program path");
  });

  test("--purpose workspace-helper with --helper-path runs the helper as the daemon would (env {}, workspace root)", async () => {
    const helper = join(box.dir, "helper.mjs");
    writeFileSync(helper, "console.log(JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd() }))\n");
    const result = await run(["--purpose", "workspace-helper", "--helper-path", helper, "--", "paseo-workspace-helper", "describe"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout.toString())).toEqual({ argv: ["describe"], cwd: workspace });
  });

  test("a paused workspace refuses the run; after resume it runs again", async () => {
    const request = `${JSON.stringify({ protocolVersion: 1, options: { stateDirectory: box.home } })}\n`;
    expect((await runIn(box, ["pause", "--workspace-id", "w"], { stdin: request })).code).toBe(0);
    const refused = await run(["--", "/bin/true"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('workspace "w" is paused');
    expect(refused.stderr).toContain(`paseo-host-runtime: run: resume it first: paseo-host-runtime workspace resume -w w --home ${box.home}`);
    expect((await runIn(box, ["resume", "--workspace-id", "w"], { stdin: request })).code).toBe(0);
    expect((await run(["--", "/bin/true"])).code).toBe(0);
  });
});

describe("run ends as the workload ended, as its --help says", () => {
  test("a pause stops a workload that ignores SIGTERM with SIGKILL: run dies by SIGKILL (137 in a shell), not exit 1", async () => {
    const help = (await runIn(box, ["run", "--help"])).stdout;
    expect(help).toContain("\nExit status: the workload's, as exec mirrors it: its exit code, or death by its signal (a shell shows 128+N: 143 after SIGTERM, 137 after SIGKILL");
    expect(help).not.toContain("Exit status: 0 success");
    const handle = start(["--env", PATH_ENV, "--", "sh", "-c", 'trap "" TERM; echo ready; while :; do sleep 0.05; done'], undefined);
    await until("ready", () => (handle.stdoutText().includes("ready") ? true : undefined));
    const request = `${JSON.stringify({ protocolVersion: 1, options: { stateDirectory: box.home, stopTimeoutMs: 200 } })}\n`;
    expect((await runIn(box, ["pause", "--workspace-id", "w"], { stdin: request })).code).toBe(0);
    const result = await handle.done;
    expect(result).toMatchObject({ code: null, signal: "SIGKILL" });
    expect((await runIn(box, ["resume", "--workspace-id", "w"], { stdin: request })).code).toBe(0);
  });
});

describe("run --pty without a terminal of its own", () => {
  test("piped input reaches a PTY workload; its exit code is mirrored", async () => {
    const result = await run(["--pty", "--env", PATH_ENV, "--", "sh", "-c", 'read line; test -t 0 && echo "tty:$line"; exit 7'], "hi\n");
    expect(result.code).toBe(7);
    expect(result.stdout.toString()).toContain("tty:hi\r\n");
  });

  test("SIGTERM to run becomes a signal frame: the workload dies by SIGTERM, and so does run", async () => {
    const handle = start(["--pty", "--env", PATH_ENV, "--", "sh", "-c", "echo ready; sleep 30"], undefined, true);
    await until("ready", () => (handle.stdoutText().includes("ready") ? true : undefined));
    handle.proc.kill("SIGTERM");
    const result = await handle.done;
    expect(result.signal).toBe("SIGTERM");
  });
});

describe("run --pty under a real terminal (tmux)", () => {
  test.skipIf(missingTools("run.test.ts, run --pty under tmux", ["tmux"]).length > 0)("the workload sees the terminal's size, then the new size after a resize; Ctrl-C reaches it as a key; the terminal is restored", async () => {
    // A private server whose socket lives in the sandbox, so cleanup removes it too.
    const socket = join(box.dir, "tmux.sock");
    const tmux = (...args: string[]) => Bun.spawnSync(["tmux", "-S", socket, "-f", "/dev/null", ...args], { env: { ...process.env, ...box.env } });
    const rcFile = join(box.dir, "pty-rc");
    const sttyFile = join(box.dir, "pty-stty");
    const script = join(box.dir, "pty.sh");
    const workload = 'stty size; read line; echo "line=$line"; stty size; exec sleep 30';
    writeFileSync(
      script,
      `'${BIN}' run --pty --workspace-id w --home '${box.home}' ${box.cgroupArgs.map((arg) => `'${arg}'`).join(" ")} --env ${PATH_ENV} -- sh -c '${workload}'\nrc=$?\nstty -a > '${sttyFile}'\necho "rc=$rc" > '${rcFile}'\nsleep 30\n`,
    );
    const pane = () => tmux("capture-pane", "-p", "-t", "op").stdout.toString();
    try {
      expect(tmux("new-session", "-d", "-s", "op", "-x", "100", "-y", "30", `sh '${script}'`).exitCode).toBe(0);
      await until("the initial size", () => (pane().includes("30 100") ? true : undefined));
      expect(tmux("resize-window", "-t", "op", "-x", "120", "-y", "40").exitCode).toBe(0);
      await Bun.sleep(150);
      tmux("send-keys", "-t", "op", "hello", "Enter");
      await until("the new size", () => (pane().includes("40 120") ? true : undefined));
      expect(pane()).toContain("line=hello");
      tmux("send-keys", "-t", "op", "C-c");
      const rc = await until("run to end", () => {
        try {
          return readFileSync(rcFile, "utf8");
        } catch {
          return undefined;
        }
      });
      // sleep died by the SIGINT its terminal made from the ^C byte; run died by it too: 128 + 2.
      expect(rc).toBe("rc=130\n");
      const stty = readFileSync(sttyFile, "utf8");
      expect(stty).toMatch(/(^|\s)icanon(\s|$)/m);
      expect(stty).toMatch(/(^|\s)echo(\s|$)/m);
      expect(stty).toMatch(/(^|\s)isig(\s|$)/m);
    } finally {
      tmux("kill-server");
    }
  });
});
