#!/usr/bin/env bun
/**
 * `npm run demo` (after `npm run build`): walks the real product with dist/paseo-host-runtime
 * in a throwaway git repository and runtime home, then removes everything it made.
 * Exits non-zero as soon as a step does not behave as shown.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ExecClient } from "../src/client/exec-client.ts";
import { ResizeQueue } from "../src/client/resize.ts";
import { SpawnEnvelope, parseStrict } from "../src/protocol/index.ts";
import { styler } from "../src/operator/report.ts";

const BIN = join(import.meta.dir, "..", "dist", "paseo-host-runtime");
const PATH_ENV = "PATH=/usr/local/bin:/usr/bin:/bin";
const WORKSPACE = "demo";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "paseo-host-runtime-demo-")));
const home = join(dir, "runtime-home");
const repo = join(dir, "repo");
// Keep the demo away from the operator's real runtime home, whatever their environment says.
const env: Record<string, string> = { ...(process.env as Record<string, string>), PASEO_HOST_RUNTIME_HOME: home, HOME: dir, XDG_STATE_HOME: join(dir, "state") };
delete env.BUN_OPTIONS;
const background: Bun.Subprocess[] = [];
const wrappers: ChildProcess[] = [];
let step = 0;

class DemoFailure extends Error {}

// Bold only on a terminal, and never with NO_COLOR set (no-color.org).
const { bold } = styler(1);

function heading(title: string): void {
  console.log(`\n${bold(`── ${++step}. ${title}`)}`);
}

/** Paths shortened for reading: $DEMO is the throwaway directory, $HOME_DIR the runtime home in it. */
function shorten(text: string): string {
  return text.replaceAll(home, "$HOME_DIR").replaceAll(dir, "$DEMO");
}

function expectThat(ok: boolean, what: string): void {
  if (!ok) throw new DemoFailure(what);
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
}

/** Shows the command line, runs it, shows its output. */
function sh(args: string[], options: { stdin?: string; expectCode?: number } = {}): { code: number; stdout: string; stderr: string } {
  const shown = args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`)).join(" ");
  console.log(`  $ paseo-host-runtime ${shorten(shown)}${options.stdin ? ` <<< '${shorten(options.stdin.trim())}'` : ""}`);
  const result = Bun.spawnSync([BIN, ...args], { env, stdin: options.stdin ? Buffer.from(options.stdin) : "ignore", stdout: "pipe", stderr: "pipe" });
  const stdout = result.stdout.toString();
  const stderr = result.stderr.toString();
  if (stdout.trim()) console.log(indent(shorten(stdout)));
  if (stderr.trim()) console.log(indent(shorten(stderr)).replace(/^    /gm, "    2> "));
  const code = result.exitCode ?? 128;
  const expected = options.expectCode ?? 0;
  expectThat(code === expected, `\`${args[0]}\` exited ${code}, expected ${expected}`);
  return { code, stdout, stderr };
}

function git(...args: string[]): void {
  const result = Bun.spawnSync(["git", ...args], {
    cwd: repo,
    env: { ...env, GIT_AUTHOR_NAME: "Demo", GIT_AUTHOR_EMAIL: "demo@example.com", GIT_COMMITTER_NAME: "Demo", GIT_COMMITTER_EMAIL: "demo@example.com" },
    stderr: "pipe",
  });
  if (result.exitCode !== 0) throw new DemoFailure(`git ${args.join(" ")} failed: ${result.stderr.toString()}`);
}

function request(): string {
  return `${JSON.stringify({ protocolVersion: 1, options: { stateDirectory: home } })}\n`;
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new DemoFailure(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

/**
 * The PTY part, driven the way the Paseo daemon drives `exec`: a spawn envelope asking for an
 * 80x24 PTY on fd 3, a resize frame once the workload printed its size, the `resized` ack on
 * fd 4 before any more keyboard input, then Enter; fd 4 is judged by the lifecycle checker.
 */
async function ptyWithResize(): Promise<void> {
  const fields = {
    type: "spawn",
    protocolVersion: 1,
    argv: ["/bin/sh", "-c", 'printf "size before: "; stty size; read line; printf "size after:  "; stty size'],
    env: { PATH: "/usr/bin:/bin" },
    purpose: { kind: "terminal", terminalId: "demo" },
    options: { stateDirectory: home },
    execId: crypto.randomUUID().replaceAll("-", ""),
    stdio: { kind: "pty", rows: 24, cols: 80, term: "xterm-256color" },
  };
  console.log(`  fd 3 → ${shorten(JSON.stringify(fields))}`);
  const client = new ExecClient(WORKSPACE, parseStrict(SpawnEnvelope, fields, "spawn envelope"), { command: [BIN], env });
  wrappers.push(client.child);
  let output = "";
  let stderr = "";
  client.child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  client.child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  client.onEvent((event) => console.log(`  fd 4 ← ${JSON.stringify(event)}`));
  await waitFor("the first stty size", () => (output.includes("24 80") ? true : undefined));
  // The client's resize queue: a missing ack within the daemon's deadline is a protocol failure.
  const resizes = new ResizeQueue(client, fields.stdio);
  console.log(`  fd 3 → ${JSON.stringify({ type: "resize", protocolVersion: 1, id: 1, rows: 40, cols: 120 })}`);
  resizes.request({ rows: 40, cols: 120 });
  resizes.whenIdle(() => client.child.stdin!.write("\n"));
  const ending = await client.ended;
  resizes.stop();
  client.closeControls();
  console.log(indent(output.replaceAll("\r", "").replace(/\n+/g, "\n")));
  expectThat(ending.violation === null && ending.exit !== null, `fd 4 was not a complete, legal lifecycle: ${ending.violation ?? "no exit event"}`);
  expectThat(stderr === "", `exec wrote to stderr: ${stderr}`);
  expectThat(/size before: 24 80/.test(output) && /size after: +40 120/.test(output), "the workload did not see 80x24, then 120x40");
}

async function main(): Promise<void> {
  if (!existsSync(BIN)) throw new DemoFailure(`${BIN} is missing: run npm run build (npm run demo does)`);
  console.log(`paseo-host-runtime demo in $DEMO=${dir} (removed at the end); runtime home $HOME_DIR=$DEMO/runtime-home`);
  mkdirSync(repo);
  git("init", "-q", "-b", "main");
  writeFileSync(join(repo, "README.md"), "# demo project\n");
  git("add", "README.md");
  git("commit", "-q", "-m", "first commit");

  heading("describe: what the daemon learns once");
  const described = sh(["describe"]);
  expectThat(described.stdout === `{"protocolVersion":1,"modes":["pipes","pty"],"reconcile":true}\n`, "describe printed unexpected bytes");

  heading("new: a workspace on a new branch, in its own worktree");
  const made = sh(["new", "--workspace-id", WORKSPACE, "--source", repo, "--branch", "demo-feature", "--base", "main", "--home", home]);
  expectThat(made.stdout.includes("PASEO_BRANCH_NAME=demo-feature"), "new did not report the branch");

  heading("run: a command through exec (pipes), with an explicit env");
  const envOnly = sh(["run", "--workspace-id", WORKSPACE, "--home", home, "--env", PATH_ENV, "--", "/usr/bin/env"]);
  expectThat(envOnly.stdout === `${PATH_ENV}\n`, "the workload's env was not exactly the one given");
  const ran = sh(["run", "--workspace-id", WORKSPACE, "--home", home, "--env", PATH_ENV, "--", "sh", "-c", 'echo "branch: $(git branch --show-current)"; cat README.md; exit 3'], { expectCode: 3 });
  expectThat(ran.stdout === "branch: demo-feature\n# demo project\n", "the workload saw another branch or file");
  console.log("    (exit status 3: run mirrors the workload's)");

  heading("a PTY, resized (the daemon's side of exec)");
  await ptyWithResize();

  heading("ps: while something runs");
  const sleeper = Bun.spawn([BIN, "run", "--workspace-id", WORKSPACE, "--home", home, "--", "/bin/sleep", "60"], { env, stdio: ["ignore", "inherit", "inherit"] });
  background.push(sleeper);
  await waitFor("the sleep to run", () => {
    const result = Bun.spawnSync([BIN, "ps", "--home", home, "--json"], { env });
    const executions = JSON.parse(result.stdout.toString()).executions as { state: string }[];
    return executions.length === 1 && executions[0]!.state === "running" ? true : undefined;
  });
  sh(["ps", "--home", home]);

  heading("ls");
  const listed = sh(["ls", "--home", home]);
  expectThat(/demo +default +[0-9a-f]{8} +seed +ready +host-directory +worktree +none +1 /.test(listed.stdout), "ls did not show the workspace with one live execution");

  heading("pause: stops what runs, refuses new runs, keeps the files");
  sh(["workspace", "pause", "-w", WORKSPACE, "--home", home]);
  await sleeper.exited;
  console.log(`    (the background run of /bin/sleep ended by ${sleeper.signalCode ?? `exit ${sleeper.exitCode}`})`);
  expectThat(sleeper.signalCode === "SIGTERM", "pause did not stop the running sleep with SIGTERM");
  const refused = sh(["run", "--workspace-id", WORKSPACE, "--home", home, "--", "/bin/true"], { expectCode: 1 });
  expectThat(refused.stderr.includes("is paused"), "a run in a paused workspace was not refused as paused");

  heading("resume: runs work again");
  sh(["workspace", "resume", "-w", WORKSPACE, "--home", home]);
  sh(["run", "--workspace-id", WORKSPACE, "--home", home, "--", "/bin/cat", "README.md"]);

  heading("rm: destroy removes the worktree, not the repository");
  sh(["rm", "--workspace-id", WORKSPACE, "--home", home]);
  const after = sh(["ls", "--home", home]);
  expectThat(after.stdout.startsWith("no workspaces"), "the workspace is still listed after rm");
  expectThat(existsSync(join(repo, "README.md")), "rm touched the user's repository");
}

let failed = false;
try {
  await main();
  console.log(`\n${bold("demo complete")}: every step behaved as shown.`);
} catch (error) {
  failed = true;
  console.error(`\ndemo failed at step ${step}: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  for (const proc of background) if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  await Promise.all(background.map((proc) => proc.exited));
  for (const child of wrappers) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  // destroy also kills any workload a failed step left running in the demo workspace.
  if (existsSync(join(home, "state.sqlite"))) Bun.spawnSync([BIN, "destroy", "--workspace-id", WORKSPACE], { env, stdin: Buffer.from(request()), stdout: "ignore", stderr: "ignore" });
  rmSync(dir, { recursive: true, force: true });
  console.log(`removed ${dir}`);
}
process.exit(failed ? 1 : 0);
