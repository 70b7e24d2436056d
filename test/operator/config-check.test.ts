/**
 * `config check` on real config.json files: the runtimes that run this binary are judged with
 * the schema every operation uses, and every kind of mistake is named.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN } from "../../kit/binary.ts";
import { runIn, sandbox, type Sandbox } from "../support/operator.ts";
import { withoutCgroups } from "../support/platform.ts";

let box: Sandbox;
let daemonHome: string;
let goodHome: string;

beforeAll(() => {
  box = sandbox();
  daemonHome = box.env.PASEO_HOME!;
  mkdirSync(daemonHome, { recursive: true });
  goodHome = join(box.dir, "good-home");
  mkdirSync(goodHome, { mode: 0o700 });
});
afterAll(() => box.cleanup());

interface Report {
  path: string;
  runtimes: { name: string; thisBinary: boolean; remote: string | null; home: string | null; owner: string | null; checks: { name: string; status: string; detail: string; hint?: string }[] }[];
  otherRuntimes: string[];
  problems: number;
}

function writeConfig(path: string, runtimes: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  writeFileSync(path, `${JSON.stringify({ version: 1, daemon: { listen: "127.0.0.1:6767" }, ...extra, workspaceRuntimes: runtimes }, null, 2)}\n`);
  return path;
}

describe("config check", () => {
  test("a config with typos: unknown keys with the nearest known key, bad values, a refused home, a shared home and owner", async () => {
    const link = join(box.dir, "runtime-link");
    symlinkSync(BIN, link);
    const file = writeConfig(join(box.dir, "typos.json"), {
      host: { type: "command", command: [BIN], options: { owner: "laptop", statedirectory: "/srv/elsewhere", stateDirectory: goodHome, stopTimeoutMs: "2s" } },
      twin: { type: "command", label: "same binary through a symlink", command: [link], options: { owner: "laptop", stateDirectory: goodHome } },
      scratch: { type: "command", command: [BIN], options: { stateDirectory: "/tmp", hostDirectory: "copy", helperpath: "/x" } },
      docker: { type: "command", command: ["/usr/bin/true"] },
      local: { type: "local" },
    });
    const result = await runIn(box, ["config", "check", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("");
    const out = result.stdout;
    expect(out).toStartWith(`${file}: 3 runtime(s) run paseo-host-runtime; not checked (another command): docker\n`);
    expect(out).toContain(`runtime "host": ${JSON.stringify([BIN])}\n`);
    expect(out).toMatch(/^ {2}✗ option +unknown option "statedirectory", ignored by the runtime; did you mean "stateDirectory"\?$/m);
    expect(out).toMatch(/^ {2}✗ option +options\.stopTimeoutMs must be an integer number of milliseconds between 0 and 3600000, got a string$/m);
    expect(out).toMatch(new RegExp(`^ {2}✓ home +${goodHome} \\(mode 700, uid \\d+\\)$`, "m"));
    expect(out).toMatch(new RegExp(`^ {2}✗ shared +runtimes "host" and "twin" share home ${goodHome} and owner "laptop": each one's reconcile would destroy the other's workspaces$`, "m"));
    expect(out).toMatch(/^ {2}✗ option +options\.hostDirectory must be "adopt" or "clone", got a string$/m);
    expect(out).toMatch(/^ {2}✗ option +unknown option "helperpath", ignored by the runtime; did you mean "helperPath"\?$/m);
    expect(out).toMatch(/^ {2}✗ home +runtime home \/tmp is group- or world-writable \(mode 1777\)/m);
    expect(out).toContain("\n6 problem(s) found\n");

    const json = JSON.parse((await runIn(box, ["config", "check", file, "--json"])).stdout) as Report;
    expect(json.problems).toBe(6);
    expect(json.runtimes.map((r) => [r.name, r.thisBinary])).toEqual([
      ["host", true],
      ["twin", true],
      ["scratch", true],
    ]);
    expect(json.otherRuntimes).toEqual(["docker"]);
  });

  test("a clean config: exit 0, and the default path is $PASEO_HOME/config.json", async () => {
    writeConfig(join(daemonHome, "config.json"), {
      a: { type: "command", command: [BIN], options: { owner: "a", stateDirectory: goodHome, stopTimeoutMs: 500 } },
      b: { type: "command", command: [BIN], options: { owner: "b", stateDirectory: goodHome } },
    });
    const result = await runIn(box, ["config", "check"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toStartWith(`${join(daemonHome, "config.json")}: 2 runtime(s) run paseo-host-runtime\n`);
    expect(result.stdout).toMatch(/^ {2}✓ options +valid; owner "a"$/m);
    expect(result.stdout).toEndWith("\nno problems found\n");
  });

  test("the default owner in one home: apart when the configurations differ (info), a clash when they are the same", async () => {
    const file = writeConfig(join(box.dir, "default-owner.json"), {
      one: { type: "command", command: [BIN], options: { stateDirectory: goodHome } },
      two: { type: "command", command: [BIN], options: { stateDirectory: goodHome, stopTimeoutMs: 500 } },
      copy: { type: "command", command: [BIN], options: { stateDirectory: goodHome } },
    });
    const json = JSON.parse((await runIn(box, ["config", "check", file, "--json"])).stdout) as Report;
    const shared = json.runtimes.flatMap((r) => r.checks.filter((c) => c.name === "shared").map((c) => [r.name, c.status, c.detail]));
    expect(shared).toEqual([
      ["two", "info", `runtimes "one" and "two" share home ${goodHome} and owner "default"; with the default owner, reconcile keeps their workspaces apart by configuration`],
      ["copy", "fail", `runtimes "one" and "copy" share home ${goodHome} and owner "default" (the same configuration too): each one's reconcile would destroy the other's workspaces`],
      ["copy", "info", `runtimes "two" and "copy" share home ${goodHome} and owner "default"; with the default owner, reconcile keeps their workspaces apart by configuration`],
    ]);
    expect(json.problems).toBe(1);
  });

  test("PASEO_HOME unset: ~/.paseo/config.json", async () => {
    const home = join(box.dir, "plain-user");
    mkdirSync(join(home, ".paseo"), { recursive: true });
    writeConfig(join(home, ".paseo", "config.json"), { a: { type: "command", command: [BIN], options: { stateDirectory: goodHome } } });
    const result = await runIn(box, ["config", "check"], { env: { PASEO_HOME: "", HOME: home } });
    expect(result.code).toBe(0);
    expect(result.stdout).toStartWith(`${join(home, ".paseo", "config.json")}: 1 runtime(s)`);
  });

  test("a --remote runtime: options judged, the home left to the remote host; same home on two hosts is not shared", async () => {
    const file = writeConfig(join(box.dir, "remote.json"), {
      near: { type: "command", command: [BIN], options: { stateDirectory: goodHome } },
      far: { type: "command", command: [BIN, "--remote", "ssh://builder@build-1"], options: { stateDirectory: goodHome, ownr: "x" } },
    });
    const json = JSON.parse((await runIn(box, ["config", "check", file, "--json"])).stdout) as Report;
    const far = json.runtimes.find((r) => r.name === "far")!;
    expect(far.remote).toBe("ssh://builder@build-1");
    expect(far.checks).toEqual([
      { name: "option", status: "fail", detail: 'unknown option "ownr", ignored by the runtime; did you mean "owner"?' },
      { name: "home", status: "info", detail: "on ssh://builder@build-1 (--remote): not checked here; doctor --config FILE --runtime far checks each of its hosts" },
    ]);
    expect(json.problems).toBe(1);
  });

  test("no runtime runs this binary: exit 1 and says so", async () => {
    const file = writeConfig(join(box.dir, "none.json"), { other: { type: "command", command: ["/usr/bin/true"] }, missing: { type: "command", command: ["no-such-runtime-on-path"] } });
    const result = await runIn(box, ["config", "check", file]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${file}: 0 runtime(s) run paseo-host-runtime`);
    expect(result.stdout).toContain(`runtime "missing": no-such-runtime-on-path is not on this PATH`);
    expect(result.stdout).toContain('no runtime in it has "command"');
  });

  test.each([
    ["a missing file", (dir: string) => join(dir, "nope.json"), "no such file"],
    ["invalid JSON", (dir: string) => (writeFileSync(join(dir, "bad.json"), "{ workspaceRuntimes: }"), join(dir, "bad.json")), "is not valid JSON"],
    ["workspaceRuntimes not an object", (dir: string) => (writeFileSync(join(dir, "list.json"), '{"workspaceRuntimes":[]}'), join(dir, "list.json")), "workspaceRuntimes must be an object"],
  ])("%s: exit 1 with the reason", async (_, make, message) => {
    const result = await runIn(box, ["config", "check", make(box.dir)]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(message);
  });

  test.each([
    [["config"], "config needs a subcommand: one of check"],
    [["config", "lint"], 'config has no subcommand "lint": one of check'],
    [["config", "check", "a.json", "b.json"], 'unexpected argument "b.json"'],
    [["config", "check", "--strict"], "unknown option --strict"],
  ])("usage error %p: exit 2", async (args, message) => {
    const result = await runIn(box, args);
    expect(result.code).toBe(2);
    expect(result.stderr).toStartWith(`paseo-host-runtime: ${message}\n`);
  });
});

describe("config check: containment and limits every create would refuse on this host", () => {
  const containmentOf = (report: Report, name: string) => report.runtimes.find((r) => r.name === name)!.checks.find((c) => c.name === "containment");

  test("limits under process groups, and containment \"cgroup\" at a directory that is no cgroup, fail as create fails; no limits, no line", async () => {
    const file = writeConfig(join(box.dir, "limits.json"), {
      grouped: { type: "command", command: [BIN], options: { owner: "g", stateDirectory: goodHome, containment: "process-group", memoryMax: "512M", pidsMax: 100 } },
      nowhere: { type: "command", command: [BIN], options: { owner: "n", stateDirectory: goodHome, containment: "cgroup", cgroupRoot: box.dir } },
      plain: { type: "command", command: [BIN], options: { owner: "p", stateDirectory: goodHome } },
    });
    const result = await runIn(box, ["config", "check", file, "--json"]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as Report;
    expect(containmentOf(report, "grouped")).toMatchObject({ status: "fail", detail: expect.stringMatching(/^memoryMax, pidsMax: every create would refuse it here: options\.memoryMax, options\.pidsMax needs cgroup containment, but process groups are in force/) });
    expect(containmentOf(report, "nowhere")).toMatchObject({ status: "fail", detail: expect.stringContaining(`containment "cgroup": every create would refuse it here: options.containment is "cgroup" but `) });
    expect(containmentOf(report, "plain")).toBeUndefined();
    expect(report.problems).toBe(2);
    // And a create with those options is refused, as said.
    const created = await runIn(box, ["new", "-w", "limited", "--source", box.dir, "--options-json", JSON.stringify({ stateDirectory: join(box.dir, "limited-home"), containment: "process-group", memoryMax: "512M" })]);
    expect(created.code).toBe(1);
    expect(created.stderr).toContain("needs cgroup containment, but process groups are in force");
    // The text says what it checked, and what is left to doctor.
    const text = (await runIn(box, ["config", "check", file])).stdout;
    expect(text).toMatch(/^ {2}✗ containment +memoryMax, pidsMax: every create would refuse it here/m);
    expect(text).toContain("doctor --config FILE --runtime NAME, run as it.\n");
  });

  test.skipIf(withoutCgroups("operator/config-check.test.ts, limits at a cgroup root"))("memoryMax and pidsMax at a cgroup root: ok exactly when its cgroup.controllers has memory and pids", async () => {
    const root = box.cgroupRoot!;
    const file = writeConfig(join(box.dir, "rooted.json"), { rooted: { type: "command", command: [BIN], options: { stateDirectory: goodHome, cgroupRoot: root, memoryMax: "512M", pidsMax: 100 } } });
    const check = containmentOf(JSON.parse((await runIn(box, ["config", "check", file, "--json"])).stdout) as Report, "rooted")!;
    const controllers = readFileSync(join(root, "cgroup.controllers"), "utf8").trim().split(/\s+/);
    const applicable = controllers.includes("memory") && controllers.includes("pids");
    if (applicable) expect(check).toMatchObject({ status: "ok", detail: `memoryMax, pidsMax: applicable here (cgroup v2 under ${root} with memory, pids)` });
    else expect(check).toMatchObject({ status: "fail", detail: expect.stringMatching(/^memoryMax, pidsMax: every create would refuse it here: options\.(memoryMax|pidsMax) needs the (memory|pids) controller, which is not available in /) });
  });

  test("without cgroupRoot: what no cgroup of this host has fails, as every create fails; the rest is judged in this process's cgroup, saying the daemon's own decides", async () => {
    const options = { stateDirectory: goodHome, pidsMax: 100 };
    const file = writeConfig(join(box.dir, "autodetected.json"), { auto: { type: "command", command: [BIN], options } });
    const check = containmentOf(JSON.parse((await runIn(box, ["config", "check", file, "--json"])).stdout) as Report, "auto")!;
    // The top of this host's cgroup v2 hierarchy, read here from /proc/mounts.
    const mounts = process.platform === "linux" ? readFileSync("/proc/mounts", "utf8").split("\n").map((line) => line.split(" ")) : [];
    const top = mounts.filter((m) => m[2] === "cgroup2").map((m) => m[1]!).sort((a, b) => Number(b === "/sys/fs/cgroup") - Number(a === "/sys/fs/cgroup"))[0];
    const pidsOnHost = top !== undefined && readFileSync(join(top, "cgroup.controllers"), "utf8").split(/\s+/).includes("pids");
    if (!pidsOnHost) {
      expect(check).toMatchObject({ status: "fail", detail: expect.stringMatching(/^pidsMax: every create would refuse it on this host: /) });
      const created = await runIn(box, ["new", "-w", "no-pids", "--source", box.dir, "--options-json", JSON.stringify({ ...options, stateDirectory: join(box.dir, "no-pids-home") })]);
      expect(created.code).toBe(1);
    } else {
      expect(["ok", "warn"]).toContain(check.status);
      expect(check.detail).toStartWith("pidsMax: ");
      expect(check.detail).toEndWith("; judged in this process's cgroup: the daemon's own decides (doctor --config FILE --runtime NAME, run as the daemon, in its service, checks it there)");
    }
  });
});
