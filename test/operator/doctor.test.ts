import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { missingTools } from "../support/tools.ts";
import { op, sandbox, type Sandbox } from "./helpers.ts";

let box: Sandbox;
beforeAll(() => {
  box = sandbox();
});
afterAll(() => box.cleanup());

interface Check {
  name: string;
  status: string;
  detail: string;
  hint?: string;
}

const NAMES = ["binary", "runtime home", "database", "git", "pty", "process identity", "workspace helper", "cgroup v2", "sandbox tools"];

describe("doctor", () => {
  test("passes on this host: every required check ✓, exit 0", async () => {
    const result = await op(box, ["doctor", "--home", box.home]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    for (const name of ["binary", "runtime home", "database", "git", "pty", "process identity"]) {
      expect(result.stdout).toMatch(new RegExp(`^✓ ${name} +\\S`, "m"));
    }
    expect(result.stdout).toContain("all required checks passed");
    expect(result.stdout).not.toContain("✗");
  });

  test("--json: one document with every check in order, ok true", async () => {
    const result = await op(box, ["doctor", "--home", box.home, "--json"]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { ok: boolean; checks: Check[] };
    expect(report.ok).toBe(true);
    expect(report.checks.map((check) => check.name)).toEqual(NAMES);
    expect(report.checks.find((check) => check.name === "git")!.detail).toMatch(/git version \d+\.\d+/);
  });

  test("a group/world-writable home (mode 0777) fails with the chmod fix, exit 1", async () => {
    const home = join(box.path, "open-home");
    mkdirSync(home);
    chmodSync(home, 0o777);
    const result = await op(box, ["doctor", "--home", home]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^✗ runtime home +.*group- or world-writable \(mode 777\)/m);
    expect(result.stdout).toContain(`fix: chmod 700 ${home}`);
    expect(result.stdout).toMatch(/^- database +not checked/m);
    expect(result.stdout).toContain("1 required check(s) failed: runtime home");
    const json = JSON.parse((await op(box, ["doctor", "--home", home, "--json"])).stdout) as { ok: boolean; checks: Check[] };
    expect(json.ok).toBe(false);
    expect(json.checks.find((check) => check.name === "runtime home")).toMatchObject({ status: "fail", hint: `chmod 700 ${home}` });
  });

  test("a PATH without git fails the git check with an install hint, exit 1", async () => {
    const result = await op(box, ["doctor", "--home", box.home], { env: { PATH: join(box.path, "empty-bin") } });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^✗ git +git not found on PATH/m);
    expect(result.stdout).toMatch(/fix: install git 2\.17 or newer on the PATH the Paseo daemon runs with/);
    expect(result.stdout).toContain("1 required check(s) failed: git");
  });

  test("the helper is found through --helper-path (options.helperPath) and says from where", async () => {
    const helper = join(box.path, "helper.mjs");
    await Bun.write(helper, "console.log('{}')\n");
    const result = await op(box, ["doctor", "--home", box.home, "--helper-path", helper]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^✓ workspace helper +${helper} \\(from options\\.helperPath, JavaScript`, "m"));
  });

  test("--quiet prints only failures and warnings, with the same exit status", async () => {
    const shownOnly = (stdout: string) => {
      for (const line of stdout.split("\n").filter(Boolean)) expect(line).toMatch(/^(✗ |! | +fix: )/);
    };
    const helper = join(box.path, "quiet-helper.mjs");
    await Bun.write(helper, "console.log('{}')\n");
    const fine = await op(box, ["doctor", "--home", box.home, "--helper-path", helper, "--quiet"]);
    expect(fine.code).toBe(0);
    expect(fine.stderr).toBe("");
    shownOnly(fine.stdout);
    expect(fine.stdout).not.toContain("all required checks passed");
    // Without a helper: its warning and fix line, exit still 0.
    const warned = await op(box, ["doctor", "--home", box.home, "--quiet"], { env: { PATH: "/usr/bin:/bin" } });
    expect(warned.code).toBe(0);
    shownOnly(warned.stdout);
    expect(warned.stdout).toMatch(/^! workspace helper +workspace helper "paseo-workspace-helper" not found/m);
    // A failing check: its line and fix, nothing else that passed or was skipped, exit 1.
    const home = join(box.path, "quiet-open-home");
    mkdirSync(home);
    chmodSync(home, 0o777);
    const failed = await op(box, ["doctor", "--home", home, "--quiet"]);
    expect(failed.code).toBe(1);
    shownOnly(failed.stdout);
    expect(failed.stdout).toMatch(/^✗ runtime home +.*group- or world-writable \(mode 777\).*\n +fix: chmod 700 /m);
    expect(failed.stdout).not.toContain("database");
  });

  describe.skipIf(missingTools("doctor --isolation sandbox", ["bwrap"]).length > 0)("with isolation sandbox configured", () => {
    test("the sandbox check starts a sandboxed /bin/true in place of the informational tools line", async () => {
      const result = await op(box, ["doctor", "--home", box.home, "--isolation", "sandbox", "--json"]);
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout) as { ok: boolean; checks: Check[] };
      expect(report.checks.map((check) => check.name)).toEqual([...NAMES.slice(0, -1), "sandbox"]);
      expect(report.checks.at(-1)).toMatchObject({ status: "ok", detail: expect.stringContaining("started a sandboxed /bin/true") });
    });

    test("without bwrap on the PATH it fails, naming the package and the sysctls, exit 1", async () => {
      const result = await op(box, ["doctor", "--home", box.home, "--isolation", "sandbox"], { env: { PATH: join(box.path, "empty-bin") } });
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(/^✗ sandbox +isolation "sandbox" needs bubblewrap, and bwrap is not on the runtime's PATH/m);
      expect(result.stdout).toContain("kernel.unprivileged_userns_clone");
      expect(result.stdout).toMatch(/fix: install bubblewrap on the daemon's PATH/);
    });
  });

  test("--help prints the usage and exits 0", async () => {
    const result = await op(box, ["doctor", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toStartWith("Usage: paseo-host-runtime doctor [--home DIR]");
  });
});
