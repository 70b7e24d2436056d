import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { background, removed, runIn, sandbox, teardown, type Sandbox } from "../support/operator.ts";
import { linuxOnly } from "../support/platform.ts";
import { until } from "../support/poll.ts";
import { processesWith, rssKiB } from "../support/procs.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc/<pid>/cmdline). */
const EXACT_ARGV = linuxOnly("operator/ls-ps.test.ts, ps's exact argv (from /proc/<pid>/cmdline)", "/proc/<pid>/cmdline");

let box: Sandbox;

beforeAll(async () => {
  box = sandbox();
  for (const id of ["alpha", "beta"]) {
    const dir = join(box.dir, id);
    mkdirSync(dir);
    const made = await runIn(box, ["new", "--workspace-id", id, "--source", dir, "--home", box.home, "--owner", id === "alpha" ? "team-a" : "team-b"]);
    if (made.code !== 0) throw new Error(`new ${id} failed: ${made.stderr}`);
  }
});

afterAll(() => teardown(box, [["alpha", "--owner", "team-a"], ["beta", "--owner", "team-b"]]));

interface Live {
  workspaceId: string;
  execId: string;
  pid: number;
  mode: string;
  purpose: string;
  argv0: string;
  state: string;
  argv: string[] | null;
  command: string;
  memoryBytes: number | null;
  memorySource: string | null;
  processes: number;
}

async function psJson(...args: string[]): Promise<Live[]> {
  const result = await runIn(box, ["ps", "--home", box.home, "--json", ...args]);
  expect(result.code).toBe(0);
  return (JSON.parse(result.stdout) as { executions: Live[] }).executions;
}

describe("ls", () => {
  test("human: one row per workspace with owner, configuration, dialect, status, source, kind, isolation and root", async () => {
    const result = await runIn(box, ["ls", "--home", box.home]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^WORKSPACE +OWNER +CONFIG +DIALECT +STATUS +SOURCE +KIND +ISOLATION +LIVE +ROOT$/);
    expect(lines[1]).toMatch(new RegExp(`^alpha +team-a +[0-9a-f]{8} +seed +ready +host-directory +adopted +none +0 +${join(box.dir, "alpha")}$`));
    expect(lines[2]).toMatch(new RegExp(`^beta +team-b +[0-9a-f]{8} +seed +ready +host-directory +adopted +none +0 +${join(box.dir, "beta")}$`));
    expect(lines).toHaveLength(3);
  });

  test("--json, filtered by --owner", async () => {
    const result = await runIn(box, ["ls", "--home", box.home, "--owner", "team-b", "--json"]);
    const listing = JSON.parse(result.stdout);
    expect(listing.home).toBe(box.home);
    expect(listing.workspaces).toHaveLength(1);
    expect(listing.workspaces[0]).toMatchObject({
      workspaceId: "beta",
      owner: "team-b",
      dialect: "seed",
      runtimeInstanceId: null,
      status: "ready",
      interrupted: false,
      source: "host-directory",
      placement: "existing",
      kind: "adopted",
      root: join(box.dir, "beta"),
      problem: null,
      liveExecutions: 0,
      isolation: { isolation: "none" },
    });
  });

  test("--owner with none of its own: says whose, and that the home holds others' (it is not empty)", async () => {
    const result = await runIn(box, ["ls", "--home", box.home, "--owner", "nobody"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`no workspaces of owner "nobody" (home ${box.home}, which holds 2 of other owners)\n`);
  });

  test("a home that does not exist: exit 1, says so, and is not created", async () => {
    const missing = join(box.dir, "no-home");
    for (const args of [["ls"], ["ls", "--json"], ["ps"], ["ps", "--json"]]) {
      const result = await runIn(box, [...args, "--home", missing]);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toBe(`paseo-host-runtime: runtime home ${missing} does not exist (nothing was ever created there; check --home, options.stateDirectory or PASEO_HOST_RUNTIME_HOME, or take the daemon's runtime with --config FILE --runtime NAME)\n`);
    }
    expect(await Bun.file(missing).exists()).toBe(false);
  });

  test("a home that exists but holds no store yet lists nothing, exit 0", async () => {
    const empty = join(box.dir, "empty-home");
    mkdirSync(empty, { mode: 0o700 });
    expect((await runIn(box, ["ls", "--home", empty])).stdout).toBe(`no workspaces (home ${empty})\n`);
    expect(JSON.parse((await runIn(box, ["ls", "--home", empty, "--json"])).stdout)).toEqual({ home: empty, workspaces: [] });
  });
});

describe("ps", () => {
  test("shows a running execution (human and JSON) without its env, and forgets it once it ended", async () => {
    expect(await psJson()).toEqual([]);
    const run = background(box, ["run", "--workspace-id", "alpha", "--home", box.home, "--owner", "team-a", ...box.cgroupArgs, "--env", "SECRET=hunter2-value", "--", "/bin/sleep", "30"]).proc;
    // Between claiming its identity and launching, the wrapper's execution shows as "starting".
    const [live] = await until("the sleep to show in ps as running", async () => {
      const list = await psJson();
      return list.length && list.every((e) => e.state === "running") ? list : undefined;
    });
    expect(live).toMatchObject({ workspaceId: "alpha", mode: "pipes", purpose: "workspace-script", argv0: "/bin/sleep", state: "running" });
    expect(live!.execId).toMatch(/^[0-9a-f]{32}$/);
    // Its own cgroup, under the runtime home's, under the root it was given.
    if (box.cgroupRoot) expect((live as unknown as { cgroup: string }).cgroup).toMatch(new RegExp(`^${box.cgroupRoot}/paseo-[0-9a-f]{16}/w-[0-9a-f]{32}/e-[0-9a-f]{32}$`));

    const human = await runIn(box, ["ps", "--home", box.home]);
    const lines = human.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^WORKSPACE +EXEC ID +PID +MODE +PURPOSE +AGE +MEMORY +COMMAND$/);
    expect(lines[1]).toMatch(new RegExp(`^alpha +${live!.execId} +${live!.pid} +pipes +workspace-script +\\d+ s +[\\d.]+ (KiB|MiB) +/bin/sleep 30$`));
    expect(human.stdout + JSON.stringify(await psJson())).not.toContain("hunter2");

    expect(await psJson("--workspace-id", "beta")).toEqual([]);
    expect(await psJson("--owner", "team-b")).toEqual([]);
    expect((await psJson("--workspace-id", "alpha")).map((e) => e.execId)).toEqual([live!.execId]);
    const ls = JSON.parse((await runIn(box, ["ls", "--home", box.home, "--json"])).stdout);
    expect(ls.workspaces.map((w: { liveExecutions: number }) => w.liveExecutions)).toEqual([1, 0]);
    if (box.cgroupRoot) expect(ls.workspaces.map((w: { cgroup: string | null }) => w.cgroup?.startsWith(`${box.cgroupRoot}/paseo-`) ?? null)).toEqual([true, null]);

    run.kill("SIGTERM");
    await run.exited;
    expect(run.signalCode).toBe("SIGTERM");
    expect(await psJson()).toEqual([]);
    expect((await runIn(box, ["ps", "--home", box.home])).stdout).toBe(`no live executions (home ${box.home})\n`);
  });
});

const FORMAT_ALL = "workspaceId,execId,pid,wrapperPid,mode,purpose,state,startedAt,age,processes,memory,memoryBytes,argv0,command";

describe("ps fields: the whole argv (quoted), age, memory, -q and --format", () => {
  test.skipIf(EXACT_ARGV)("a workload with spaces and quotes in its argv", async () => {
    const argv = ["/bin/sh", "-c", "sleep 30; echo 'done it'", "name with space"];
    const run = background(box, ["run", "-w", "beta", "--home", box.home, "--owner", "team-b", "--env", "TOKEN=do-not-show", "--", ...argv]).proc;
    const [live] = await until("the workload to run", async () => {
      const list = await psJson("-w", "beta");
      return list.length && list.every((e) => e.state === "running") ? list : undefined;
    });
    expect(live!.argv).toEqual(argv);
    expect(live!.command).toBe(String.raw`/bin/sh -c 'sleep 30; echo '\''done it'\''' 'name with space'`);
    expect(live!.memorySource).toBe("pss");
    expect(live!.memoryBytes).toBeGreaterThan(0);

    const quiet = await runIn(box, ["ps", "--home", box.home, "-q"]);
    expect(quiet.stdout).toBe(`${live!.execId}\n`);
    const template = await runIn(box, ["ps", "--home", box.home, "--format", String.raw`{{.workspaceId}}\t{{.pid}}\t{{ .command }}`]);
    expect(template.stdout).toBe(`beta\t${live!.pid}\t${live!.command}\n`);
    const table = await runIn(box, ["ps", "--home", box.home, "--format", "execId,age,memory"]);
    const [header, row] = table.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^EXEC ID +AGE +MEMORY$/);
    expect(row).toMatch(new RegExp(`^${live!.execId} +\\d+ s +[\\d.]+ (KiB|MiB)$`));
    // The environment never shows, in any form.
    for (const args of [[], ["--json"], ["--format", FORMAT_ALL]]) expect((await runIn(box, ["ps", "--home", box.home, ...args])).stdout).not.toContain("do-not-show");

    run.kill("SIGTERM");
    await run.exited;
    expect((await runIn(box, ["ps", "--home", box.home, "-q"])).stdout).toBe("");
  });

  test.skipIf(linuxOnly("ls-ps.test.ts, ps memory as proportional set size", "/proc/<pid>/smaps_rollup"))("without a cgroup of its own, memory is the proportional set size: 20 sleeps sharing their pages count far less than their resident sizes added up", async () => {
    const dir = join(box.dir, "gamma");
    mkdirSync(dir);
    const scope = ["--owner", "team-c", "--options-json", JSON.stringify({ containment: "process-group" })];
    const options = ["--home", box.home, ...scope];
    expect((await runIn(box, ["new", "-w", "gamma", "--source", dir, ...options])).code).toBe(0);
    const tag = `61.${process.pid}`;
    const run = background(box, ["run", "-w", "gamma", ...options, "--env", "PATH=/usr/bin:/bin", "--", "/bin/sh", "-c", `for i in $(seq 20); do sleep ${tag} & done; wait`]).proc;
    try {
      const [live] = await until("the shell and its 20 sleeps", async () => {
        const list = await psJson("-w", "gamma");
        return list.length === 1 && list[0]!.processes === 21 ? list : undefined;
      });
      const sleepsRss = processesWith(`sleep\0${tag}`).reduce((sum, pid) => sum + (rssKiB(pid) ?? 0) * 1024, 0);
      expect(live!.memorySource).toBe("pss");
      // The shell and the sleeps share libc and the sleep binary: their PSS is well under half their RSS summed.
      expect(live!.memoryBytes).toBeGreaterThan(0);
      expect(live!.memoryBytes!).toBeLessThan(sleepsRss / 2);
    } finally {
      run.kill("SIGTERM");
      await run.exited;
      await removed(box, "gamma", ...scope);
    }
  });

  test("--format with an unknown field is a usage error naming the fields", async () => {
    for (const format of ["pid,bogus", "{{.bogus}}"]) {
      const result = await runIn(box, ["ps", "--home", box.home, "--format", format]);
      expect(result.code).toBe(2);
      expect(result.stderr).toStartWith('paseo-host-runtime: --format has an unknown field "bogus" (fields: workspaceId, execId, pid,');
    }
  });

  test("--format takes only ps's own fields, never an Object key such as constructor", async () => {
    for (const [format, field] of [["constructor", "constructor"], ["{{.toString}}", "toString"]]) {
      const result = await runIn(box, ["ps", "--home", box.home, "--format", format!]);
      expect(result.code).toBe(2);
      expect(result.stderr).toStartWith(`paseo-host-runtime: --format has an unknown field "${field}" (fields: workspaceId,`);
    }
  });
});

describe.skipIf(EXACT_ARGV)("ps never writes a workload's control characters raw", () => {
  test("an argv with ESC and C1 sequences is shown escaped, in the table, --format and --json", async () => {
    const hostile = ["/bin/sh", "-c", "sleep 30", "x\x1b]0;pwned\x07y", "\u009b31mred"];
    const run = background(box, ["run", "-w", "alpha", "--home", box.home, "--owner", "team-a", "--", ...hostile]).proc;
    const [live] = await until("the workload to run", async () => {
      const list = await psJson("-w", "alpha");
      return list.length && list.every((e) => e.state === "running") ? list : undefined;
    });
    expect(live!.argv).toEqual(hostile);
    expect(live!.command).toBe(String.raw`/bin/sh -c 'sleep 30' $'x\x1b]0;pwned\x07y' $'\u009b31mred'`);
    for (const args of [[], ["--json"], ["--format", "{{.command}} {{.argv0}}"], ["--format", "command"]]) {
      const out = (await runIn(box, ["ps", "--home", box.home, "-w", "alpha", ...args])).stdout;
      expect(out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    }
    run.kill("SIGTERM");
    await run.exited;
  });
});
