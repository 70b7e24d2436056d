import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { laterRequest } from "../support/binary.ts";
import { INSTANCE_ID } from "../support/daemon.ts";
import { gitRepo, op, sandbox, type Sandbox } from "./helpers.ts";

let box: Sandbox;
let repo: string;
beforeAll(() => {
  box = sandbox();
  repo = gitRepo(box);
});
afterAll(() => box.cleanup());

interface Listed {
  workspaceId: string;
  status: string;
  source: string;
  placement: string;
  kind: string;
  root: string;
}

async function listed(): Promise<Listed[]> {
  const result = await op(box, ["ls", "--home", box.home, "--json"]);
  expect(result.code).toBe(0);
  return (JSON.parse(result.stdout) as { workspaces: Listed[] }).workspaces;
}

describe("new and rm", () => {
  test("new on a branch worktree shows the ready workspace; ls sees it; rm destroys it and only it", async () => {
    const made = await op(box, ["new", "--workspace-id", "feature-ws", "--source", repo, "--branch", "feature", "--base", "main", "--home", box.home]);
    expect(made.code).toBe(0);
    expect(made.stdout).toStartWith("workspace feature-ws is ready\n");
    expect(made.stdout).toContain(`  source       ${repo}\n`);
    expect(made.stdout).toContain("  placement    new branch feature from main in its own worktree\n");
    expect(made.stdout).toContain("  env          PASEO_BRANCH_NAME=feature\n");
    expect(made.stdout).toContain(`next: paseo-host-runtime run --workspace-id feature-ws --home ${box.home} -- COMMAND...`);
    const [entry] = await listed();
    expect(entry).toMatchObject({ workspaceId: "feature-ws", status: "ready", source: "host-directory", placement: "branch", kind: "worktree" });
    expect(readFileSync(join(entry!.root, "hello.txt"), "utf8")).toBe("hello\n");

    const removed = await op(box, ["rm", "--workspace-id", "feature-ws", "--home", box.home]);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toBe("workspace feature-ws destroyed\n");
    expect(existsSync(entry!.root)).toBe(false);
    expect(existsSync(join(repo, "hello.txt"))).toBe(true);
    expect(await listed()).toEqual([]);

    const again = await op(box, ["rm", "--workspace-id", "feature-ws", "--home", box.home, "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ workspaceId: "feature-ws", existed: false, destroyed: true });
  });

  test("new --json prints the create response; rm of an adopted directory leaves the directory", async () => {
    const made = await op(box, ["new", "--workspace-id", "adopted", "--source", repo, "--home", box.home, "--json"]);
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({
      type: "state",
      protocolVersion: 1,
      state: { workspaceId: "adopted", lifecycle: "ready" },
      placement: { cwd: repo },
    });
    const removed = await op(box, ["rm", "--workspace-id", "adopted", "--home", box.home, "--json"]);
    expect(JSON.parse(removed.stdout)).toEqual({ workspaceId: "adopted", existed: true, destroyed: true });
    expect(existsSync(join(repo, "hello.txt"))).toBe(true);
  });

  test("--owner is honoured like options.owner: another owner's rm is refused and changes nothing", async () => {
    expect((await op(box, ["new", "--workspace-id", "owned", "--source", repo, "--home", box.home, "--owner", "alice"])).code).toBe(0);
    const refused = await op(box, ["rm", "--workspace-id", "owned", "--home", box.home, "--owner", "bob"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("ownership mismatch");
    expect(refused.stderr).toContain('rm: destroy of workspace "owned" failed');
    expect((await listed()).map((w) => w.workspaceId)).toEqual(["owned"]);
    expect((await op(box, ["rm", "--workspace-id", "owned", "--home", box.home, "--owner", "alice"])).code).toBe(0);
  });

  test("rm removes a later-dialect workspace too (it speaks the workspace's dialect); the owner must still match", async () => {
    const input = { workspaceId: "later-ws", project: { projectId: "p", source: { kind: "directory", path: repo } }, placement: { kind: "branch", branchName: "later-ws", baseRef: "main" } };
    const created = await op(box, ["create", "--workspace-id", "later-ws"], { stdin: laterRequest(INSTANCE_ID, { stateDirectory: box.home, owner: "alice" }, { input }) });
    expect(created.code).toBe(0);
    const refused = await op(box, ["rm", "--workspace-id", "later-ws", "--home", box.home, "--owner", "bob"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("ownership mismatch");
    const removed = await op(box, ["rm", "--workspace-id", "later-ws", "--home", box.home, "--owner", "alice", "--json"]);
    expect(removed.stderr).toBe("");
    expect(JSON.parse(removed.stdout)).toEqual({ workspaceId: "later-ws", existed: true, destroyed: true });
    expect((await listed()).map((w) => w.workspaceId)).not.toContain("later-ws");
    expect(existsSync(JSON.parse(created.stdout).placement.cwd)).toBe(false);
  });

  test("a failing create is reported with its own reason, exit 1", async () => {
    const result = await op(box, ["new", "--workspace-id", "nowhere", "--source", join(box.path, "missing"), "--home", box.home]);
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
    const result = await op(box, ["new", "--workspace-id", "bad", "--source", repo, "--home", box.home, ...extra]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain("Usage: paseo-host-runtime new --workspace-id W --source PATH|URL");
    expect(await listed()).toEqual([]);
  });
});
