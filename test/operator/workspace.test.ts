/** `workspace pause|resume|inspect|reconcile`: the whole lifecycle for people, without JSON to write. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { laterRequest } from "../../kit/binary.ts";
import { INSTANCE_ID } from "../../kit/envelope.ts";
import { background, lsIds, runIn, sandbox, teardown, type Sandbox } from "../support/operator.ts";
import { until } from "../support/poll.ts";

let box: Sandbox;

beforeAll(() => {
  box = sandbox();
});
afterAll(() => teardown(box));

async function newWorkspace(id: string, owner = "default"): Promise<string> {
  const dir = join(box.dir, `src-${id}`);
  mkdirSync(dir);
  const made = await runIn(box, ["new", "-w", id, "--source", dir, "--home", box.home, "--owner", owner]);
  if (made.code !== 0) throw new Error(`new ${id}: ${made.stderr}`);
  return dir;
}

const ids = (owner?: string) => lsIds(box, ...(owner ? ["--owner", owner] : []));

describe("workspace pause, resume and inspect", () => {
  test("pause stops what runs (SIGTERM) and refuses new runs; inspect shows paused; resume makes it ready", async () => {
    const dir = await newWorkspace("life");
    const sleeper = background(box, ["run", "-w", "life", "--home", box.home, ...box.cgroupArgs, "--", "/bin/sleep", "60"]).proc;
    await until("the sleep to run", async () => {
      const list = JSON.parse((await runIn(box, ["ps", "--home", box.home, "--json"])).stdout).executions as { state: string }[];
      return list.length === 1 && list[0]!.state === "running" ? true : undefined;
    });

    const paused = await runIn(box, ["workspace", "pause", "-w", "life", "--home", box.home]);
    expect(paused.stderr).toBe("");
    expect(paused.code).toBe(0);
    expect(paused.stdout).toBe(`workspace life is paused (1 live execution(s) were stopped); resume it with: paseo-host-runtime workspace resume -w life --home ${box.home}\n`);
    await sleeper.exited;
    expect(sleeper.signalCode).toBe("SIGTERM");
    const refused = await runIn(box, ["run", "-w", "life", "--home", box.home, ...box.cgroupArgs, "--", "/bin/true"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('workspace "life" is paused');

    const inspected = await runIn(box, ["workspace", "inspect", "-w", "life", "--home", box.home]);
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toStartWith(`workspace life is paused\n  cwd          ${dir}\n`);

    const resumed = await runIn(box, ["workspace", "resume", "-w", "life", "--home", box.home, "--json"]);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ type: "state", protocolVersion: 1, state: { workspaceId: "life", lifecycle: "ready" }, placement: { cwd: dir } });
    const json = await runIn(box, ["workspace", "inspect", "-w", "life", "--home", box.home, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ type: "inspection", inspection: { status: "ready" } });
    expect((await runIn(box, ["run", "-w", "life", "--home", box.home, ...box.cgroupArgs, "--", "/bin/true"])).code).toBe(0);
  });

  test("inspect: missing and error exit 1 with the answer shown", async () => {
    const missing = await runIn(box, ["workspace", "inspect", "-w", "never-made", "--home", box.home]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("workspace never-made is missing (no such workspace in this home, or its create has not finished)\n");
    const dir = await newWorkspace("gone-root");
    renameSync(dir, `${dir}.moved`);
    const broken = await runIn(box, ["workspace", "inspect", "-w", "gone-root", "--home", box.home, "--json"]);
    expect(broken.code).toBe(1);
    expect(JSON.parse(broken.stdout).inspection.status).toBe("error");
    const human = await runIn(box, ["workspace", "inspect", "-w", "gone-root", "--home", box.home]);
    expect(human.stdout).toStartWith("workspace gone-root is in error: ");
    renameSync(`${dir}.moved`, dir);
  });

  test("pause of a workspace that does not exist: exit 1 with the operation's reason", async () => {
    const result = await runIn(box, ["workspace", "pause", "-w", "nothing-here", "--home", box.home]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('workspace "nothing-here" does not exist');
    expect(result.stderr).toContain('workspace pause: pause of workspace "nothing-here" failed (exit 1)');
  });
});

describe("a workspace of the later dialect", () => {
  test("pause, inspect and resume speak the dialect it was created in; reconcile reaches it with --runtime-instance-id", async () => {
    const dir = join(box.dir, "src-later");
    mkdirSync(dir);
    const options = { stateDirectory: box.home, owner: "later-owner" };
    const input = { workspaceId: "later", project: { projectId: "p", source: { kind: "directory", path: dir } }, placement: { kind: "existing" } };
    const created = await runIn(box, ["create", "--workspace-id", "later"], { stdin: laterRequest(INSTANCE_ID, options, { input }) });
    expect(created.code).toBe(0);
    const home = ["--home", box.home, "--owner", "later-owner"];
    expect((await runIn(box, ["workspace", "pause", "-w", "later", ...home])).code).toBe(0);
    const inspected = await runIn(box, ["workspace", "inspect", "-w", "later", ...home, "--json"]);
    expect(JSON.parse(inspected.stdout)).toEqual({ type: "inspection", protocolVersion: 1, inspection: { status: "paused", state: expect.any(Object), placement: { cwd: dir } } });
    expect((await runIn(box, ["workspace", "resume", "-w", "later", ...home])).stdout).toStartWith("workspace later is ready\n");
    // The seed dialect's reconcile never sees it; the later dialect's with its instance id does.
    const seed = await runIn(box, ["workspace", "reconcile", "--keep-all", ...home, "--json"]);
    expect(JSON.parse(seed.stdout)).toEqual({ owner: "later-owner", kept: [], destroyed: [] });
    const none = await runIn(box, ["workspace", "reconcile", "--keep", "other", "--runtime-instance-id", INSTANCE_ID, ...home]);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe('destroyed 1 workspace(s) of owner "later-owner": later\n');
  });
});

describe("workspace reconcile", () => {
  test("--keep destroys only this owner's other workspaces; --keep-all destroys nothing", async () => {
    for (const id of ["keep-me", "drop-me"]) await newWorkspace(id, "team-r");
    await newWorkspace("not-mine", "team-other");
    const kept = await runIn(box, ["workspace", "reconcile", "--keep", "keep-me", "--home", box.home, "--owner", "team-r"]);
    expect(kept.stderr).toBe("");
    expect(kept.code).toBe(0);
    expect(kept.stdout).toBe('destroyed 1 workspace(s) of owner "team-r": drop-me\n');
    expect(await ids("team-r")).toEqual(["keep-me"]);
    expect(await ids("team-other")).toEqual(["not-mine"]);

    const all = await runIn(box, ["workspace", "reconcile", "--keep-all", "--home", box.home, "--owner", "team-r", "--json"]);
    expect(all.code).toBe(0);
    expect(JSON.parse(all.stdout)).toEqual({ owner: "team-r", kept: ["keep-me"], destroyed: [] });
    expect(await ids("team-r")).toEqual(["keep-me"]);
  });

  test("default owner: --keep-all keeps only its own configuration's workspaces, never adopts another runtime's", async () => {
    const home = join(box.dir, "shared-home");
    const a = ["--home", home];
    const b = ["--home", home, "--options-json", '{"hostDirectory":"adopt"}'];
    for (const [id, selection] of [["conf-a", a], ["conf-b", b]] as const) {
      const dir = join(box.dir, `src-${id}`);
      mkdirSync(dir);
      expect((await runIn(box, ["new", "-w", id, "--source", dir, ...selection])).code).toBe(0);
    }
    const all = await runIn(box, ["workspace", "reconcile", "--keep-all", ...a, "--json"]);
    expect(JSON.parse(all.stdout)).toEqual({ owner: "default", kept: ["conf-a"], destroyed: [] });
    // Had --keep-all listed conf-b, it would now belong to configuration a, and this would destroy it.
    const kept = await runIn(box, ["workspace", "reconcile", "--keep", "conf-a", ...a]);
    expect(kept.stdout).toBe('nothing destroyed (owner "default")\n');
    expect((await lsIds({ home, env: box.env })).sort()).toEqual(["conf-a", "conf-b"]);
  });

  test.each([
    [[], "say which workspaces to keep: --keep W (repeatable), or --keep-all"],
    [["--keep", "a", "--keep-all"], "give either --keep W... or --keep-all, not both"],
  ])("usage error %p: exit 2, nothing destroyed", async (extra, message) => {
    const before = await ids();
    const result = await runIn(box, ["workspace", "reconcile", "--home", box.home, ...extra]);
    expect(result.code).toBe(2);
    expect(result.stderr).toStartWith(`paseo-host-runtime: ${message}`);
    expect(await ids()).toEqual(before);
  });
});
