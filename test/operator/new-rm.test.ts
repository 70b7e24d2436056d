import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { laterRequest, BIN } from "../../kit/binary.ts";
import { INSTANCE_ID } from "../../kit/envelope.ts";
import { background, listed, runIn, sandbox, teardown, type Sandbox } from "../support/operator.ts";
import { oneCommitRepo } from "../support/git.ts";
import { until } from "../support/poll.ts";

let box: Sandbox;
let repo: string;
beforeAll(() => {
  box = sandbox();
  repo = oneCommitRepo(join(box.dir, "repo"));
});
// Each test removes what it made (and asserts ls is empty after).
afterAll(() => teardown(box));

/** Starts `run` of `argv` in a workspace in the background. */
function started(workspaceId: string, argv: string[], extra: string[] = []): Bun.Subprocess {
  return background(box, ["run", "-w", workspaceId, "--home", box.home, ...extra, "--", ...argv]).proc;
}

async function liveExecIds(workspaceId: string): Promise<string[]> {
  const result = await runIn(box, ["ps", "--home", box.home, "-w", workspaceId, "--json"]);
  return (JSON.parse(result.stdout) as { executions: { execId: string; state: string }[] }).executions.filter((e) => e.state === "running").map((e) => e.execId);
}

describe("new and rm", () => {
  test("new on a branch worktree shows the ready workspace; ls sees it; rm destroys it and only it", async () => {
    const made = await runIn(box, ["new", "--workspace-id", "feature-ws", "--source", repo, "--branch", "feature", "--base", "main", "--home", box.home]);
    expect(made.code).toBe(0);
    expect(made.stdout).toStartWith("workspace feature-ws is ready\n");
    expect(made.stdout).toContain(`  source       ${repo}\n`);
    expect(made.stdout).toContain("  placement    new branch feature from main in its own worktree\n");
    expect(made.stdout).toContain("  env          PASEO_BRANCH_NAME=feature\n");
    expect(made.stdout).toContain(`next: paseo-host-runtime run --workspace-id feature-ws --home ${box.home} -- COMMAND...`);
    const [entry] = await listed(box);
    expect(entry).toMatchObject({ workspaceId: "feature-ws", status: "ready", source: "host-directory", placement: "branch", kind: "worktree" });
    expect(readFileSync(join(entry!.root, "hello.txt"), "utf8")).toBe("hello\n");

    const removed = await runIn(box, ["rm", "--workspace-id", "feature-ws", "--home", box.home]);
    expect(removed.code).toBe(0);
    // What it removed, and the branch it keeps (destroy never deletes a branch).
    expect(removed.stdout).toBe(`workspace feature-ws destroyed: its worktree ${entry!.root} removed; branch feature kept in ${repo}\n`);
    expect(existsSync(entry!.root)).toBe(false);
    expect(existsSync(join(repo, "hello.txt"))).toBe(true);
    expect(await listed(box)).toEqual([]);

    // A person's rm of an id that is not there is a mistake, said so (exit 1, nothing changed), with the nearest id;
    // --force accepts it, as the protocol's idempotent destroy does.
    expect((await runIn(box, ["new", "--workspace-id", "feature-two", "--source", repo, "--branch", "two", "--base", "main", "--home", box.home])).code).toBe(0);
    const typo = await runIn(box, ["rm", "--workspace-id", "feature-tow", "--home", box.home]);
    expect(typo.code).toBe(1);
    expect(typo.stdout).toBe("");
    expect(typo.stderr).toBe(
      `paseo-host-runtime: rm: no workspace "feature-tow" of owner "default" (did you mean "feature-two"?); nothing was changed. paseo-host-runtime ls --home ${box.home} lists them; rm --force accepts an id that does not exist\n`,
    );
    expect((await listed(box)).map((w) => w.workspaceId)).toEqual(["feature-two"]);
    const again = await runIn(box, ["rm", "--workspace-id", "feature-ws", "--home", box.home, "--json", "--force"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ workspaceId: "feature-ws", existed: false, destroyed: true, stoppedExecutions: 0 });
    expect((await runIn(box, ["rm", "--workspace-id", "feature-two", "--home", box.home])).code).toBe(0);
  });

  test("new --json prints the create response; rm of an adopted directory leaves the directory", async () => {
    const made = await runIn(box, ["new", "--workspace-id", "adopted", "--source", repo, "--home", box.home, "--json"]);
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({
      type: "state",
      protocolVersion: 1,
      state: { workspaceId: "adopted", lifecycle: "ready" },
      placement: { cwd: repo },
    });
    const removed = await runIn(box, ["rm", "--workspace-id", "adopted", "--home", box.home, "--json"]);
    expect(JSON.parse(removed.stdout)).toEqual({ workspaceId: "adopted", existed: true, destroyed: true, stoppedExecutions: 0 });
    expect(existsSync(join(repo, "hello.txt"))).toBe(true);
    // Said to a person: the adopted directory is left as it was, not "destroyed".
    expect((await runIn(box, ["new", "--workspace-id", "adopted", "--source", repo, "--home", box.home])).code).toBe(0);
    expect((await runIn(box, ["rm", "--workspace-id", "adopted", "--home", box.home])).stdout).toBe(`workspace adopted removed; its adopted directory ${repo} is left as it was\n`);
    expect(existsSync(join(repo, "hello.txt"))).toBe(true);
  });

  test("--owner is honoured like options.owner: another owner's rm is refused and changes nothing", async () => {
    expect((await runIn(box, ["new", "--workspace-id", "owned", "--source", repo, "--home", box.home, "--owner", "alice"])).code).toBe(0);
    const refused = await runIn(box, ["rm", "--workspace-id", "owned", "--home", box.home, "--owner", "bob"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("ownership mismatch");
    expect(refused.stderr).toContain('rm: destroy of workspace "owned" failed');
    expect((await listed(box)).map((w) => w.workspaceId)).toEqual(["owned"]);
    expect((await runIn(box, ["rm", "--workspace-id", "owned", "--home", box.home, "--owner", "alice"])).code).toBe(0);
  });

  test("rm removes a later-dialect workspace too (it speaks the workspace's dialect); the owner must still match", async () => {
    const input = { workspaceId: "later-ws", project: { projectId: "p", source: { kind: "directory", path: repo } }, placement: { kind: "branch", branchName: "later-ws", baseRef: "main" } };
    const created = await runIn(box, ["create", "--workspace-id", "later-ws"], { stdin: laterRequest(INSTANCE_ID, { stateDirectory: box.home, owner: "alice" }, { input }) });
    expect(created.code).toBe(0);
    const refused = await runIn(box, ["rm", "--workspace-id", "later-ws", "--home", box.home, "--owner", "bob"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("ownership mismatch");
    const removed = await runIn(box, ["rm", "--workspace-id", "later-ws", "--home", box.home, "--owner", "alice", "--json"]);
    expect(removed.stderr).toBe("");
    expect(JSON.parse(removed.stdout)).toEqual({ workspaceId: "later-ws", existed: true, destroyed: true, stoppedExecutions: 0 });
    expect((await listed(box)).map((w) => w.workspaceId)).not.toContain("later-ws");
    expect(existsSync(JSON.parse(created.stdout).placement.cwd)).toBe(false);
  });

  test("a failing create is reported with its own reason, exit 1", async () => {
    const result = await runIn(box, ["new", "--workspace-id", "nowhere", "--source", join(box.dir, "missing"), "--home", box.home]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain('new: create of workspace "nowhere" failed');
  });

  test.each([
    [["--branch", "x"], "--branch needs --base REF"],
    [["--base", "main"], "--base goes with --branch NAME"],
    [["--branch", "x", "--base", "main", "--checkout", "main"], "give either --branch (with --base) or --checkout, not both"],
    [["--revision", "v1"], "--revision applies only to a git URL --source"],
  ])("usage error %p: exit 2, nothing created", async (extra, message) => {
    const result = await runIn(box, ["new", "--workspace-id", "bad", "--source", repo, "--home", box.home, ...extra]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain("Usage: paseo-host-runtime new --workspace-id W --source PATH|URL");
    expect(await listed(box)).toEqual([]);
  });
});

describe("rm with live executions", () => {
  /** A workload that records the SIGTERM it gets, then exits 0; until then it keeps running. */
  const termRecorder = (file: string) => ["/bin/sh", "-c", `trap 'echo TERM > ${file}; exit 0' TERM; while :; do /bin/sleep 0.05; done`];

  test("refused without --force: exit 1, the workspace and its execution untouched", async () => {
    const dir = join(box.dir, "busy");
    mkdirSync(dir);
    expect((await runIn(box, ["new", "-w", "busy", "--source", dir, "--home", box.home])).code).toBe(0);
    const marker = join(box.dir, "busy.term");
    const run = started("busy", termRecorder(marker));
    const [execId] = await until("the workload to run", async () => ((await liveExecIds("busy")).length ? await liveExecIds("busy") : undefined));
    const refused = await runIn(box, ["rm", "-w", "busy", "--home", box.home]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toBe(
      `paseo-host-runtime: rm: workspace "busy" has 1 live execution(s) (${execId}); nothing was changed. Stop them first (paseo-host-runtime workspace pause -w busy --home ${box.home}), or pass --force (SIGTERM, the stopTimeoutMs grace, then SIGKILL)\n`,
    );
    expect((await listed(box)).map((w) => [w.workspaceId, w.status])).toEqual([["busy", "ready"]]);
    expect(await liveExecIds("busy")).toEqual([execId!]);
    expect(run.exitCode).toBeNull();
    expect(existsSync(marker)).toBe(false);

    // --force: the same SIGTERM → grace → SIGKILL as pause; the workload's trap runs, then destroy.
    const forced = await runIn(box, ["rm", "-w", "busy", "--home", box.home, "--force"]);
    expect(forced.stderr).toBe("");
    expect(forced.code).toBe(0);
    expect(forced.stdout).toBe(`workspace busy removed; its adopted directory ${dir} is left as it was (1 live execution(s) stopped first)\n`);
    await run.exited;
    expect(readFileSync(marker, "utf8")).toBe("TERM\n");
    expect(run.exitCode).toBe(0);
    expect(await listed(box)).toEqual([]);
    expect(existsSync(dir)).toBe(true);
  });

  test("--force on a workload that ignores SIGTERM: SIGKILL after stopTimeoutMs (from --options-json)", async () => {
    const dir = join(box.dir, "stubborn");
    mkdirSync(dir);
    expect((await runIn(box, ["new", "-w", "stubborn", "--source", dir, "--home", box.home])).code).toBe(0);
    const run = started("stubborn", ["/bin/sh", "-c", "trap '' TERM; while :; do /bin/sleep 0.05; done"]);
    await until("the workload to run", async () => ((await liveExecIds("stubborn")).length ? true : undefined));
    const forced = await runIn(box, ["rm", "-f", "-w", "stubborn", "--home", box.home, "--options-json", '{"stopTimeoutMs":300}', "--json"]);
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toEqual({ workspaceId: "stubborn", existed: true, destroyed: true, stoppedExecutions: 1 });
    await run.exited;
    expect(run.signalCode).toBe("SIGKILL");
    expect(await listed(box)).toEqual([]);
  });
});

describe("new and run take the daemon's whole options", () => {
  test("--config FILE: the options of the runtime that runs this binary (home, owner, lifecycleEnvironment)", async () => {
    const home = join(box.dir, "config-home");
    const config = join(box.dir, "config.json");
    writeFileSync(
      config,
      JSON.stringify({
        workspaceRuntimes: {
          other: { type: "command", command: ["/usr/bin/true"] },
          host: { type: "command", command: [BIN], options: { owner: "from-config", stateDirectory: home, lifecycleEnvironment: { TEAM: "blue" } } },
        },
      }),
    );
    const made = await runIn(box, ["new", "-w", "cfg", "--source", repo, "--config", config]);
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);
    expect(made.stdout).toContain("  env          TEAM=blue\n");
    expect(made.stdout).toContain(`next: paseo-host-runtime run --workspace-id cfg --config ${config} -- COMMAND...`);
    expect((await listed({ home, env: box.env })).map((w) => [w.workspaceId, w.owner])).toEqual([["cfg", "from-config"]]);
    const ran = await runIn(box, ["run", "-w", "cfg", "--config", config, "--runtime", "host", "-e", "X=1", "--", "/usr/bin/env"]);
    expect(ran.code).toBe(0);
    expect(ran.stdout).toBe("X=1\n");
    // --owner on top of --config: another owner, refused by the operation.
    const foreign = await runIn(box, ["run", "-w", "cfg", "--config", config, "--owner", "someone-else", "--", "/bin/true"]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain("ownership mismatch");
    expect((await runIn(box, ["rm", "-w", "cfg", "--config", config])).code).toBe(0);
  });

  test("--options-json: the whole map; --home and --owner override its keys", async () => {
    const home = join(box.dir, "json-home");
    const made = await runIn(box, ["new", "-w", "inline", "--source", repo, "--options-json", JSON.stringify({ stateDirectory: join(box.dir, "ignored"), owner: "x", exposeHostVisiblePath: false }), "--home", home, "--owner", "y", "--json"]);
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout).placement).toEqual({ cwd: repo });
    expect((await listed({ home, env: box.env })).map((w) => w.owner)).toEqual(["y"]);
    expect(existsSync(join(box.dir, "ignored"))).toBe(false);
    expect((await runIn(box, ["rm", "-w", "inline", "--home", home, "--owner", "y"])).code).toBe(0);
  });

  test.each([
    [["--options-json", "[1]"], "--options-json must be a JSON object"],
    [["--options-json", "{"], "--options-json is not valid JSON"],
    [["--runtime", "host"], '--runtime "host" names a runtime of the daemon\'s config.json, and the default one'],
    [["--options-json", "{}", "--config", "/x.json"], "give either --options-json or --config, not both"],
    [["--config", "/nonexistent/config.json"], "--config: cannot read the daemon configuration /nonexistent/config.json: no such file"],
  ])("usage error %p: exit 2, nothing created", async (extra, message) => {
    const result = await runIn(box, ["new", "-w", "bad-options", "--source", repo, "--home", box.home, ...extra]);
    expect(result.code).toBe(2);
    expect(result.stderr).toStartWith(`paseo-host-runtime: ${message}`);
    expect(await listed(box)).toEqual([]);
  });

  test("--config with several runtimes of this binary needs --runtime", async () => {
    const config = join(box.dir, "two.json");
    writeFileSync(config, JSON.stringify({ workspaceRuntimes: { a: { type: "command", command: [BIN] }, b: { type: "command", command: [BIN] } } }));
    const result = await runIn(box, ["new", "-w", "two", "--source", repo, "--config", config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('several runtimes run paseo-host-runtime ("a", "b"); pick one with --runtime NAME');
  });
});

