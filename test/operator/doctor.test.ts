import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runOnTerminal, BIN } from "../../kit/binary.ts";
import { missingTools } from "../support/tools.ts";
import { runIn, sandbox, type Sandbox } from "../support/operator.ts";
import { IS_LINUX, linuxOnly, withoutCgroups, withoutRoot } from "../support/platform.ts";
import { storePath } from "../support/store.ts";

/** Set where the tests marked with it cannot run: they need Linux (bubblewrap). */
const BUBBLEWRAP = linuxOnly("operator/doctor.test.ts, the sandbox check's bubblewrap message", "bubblewrap");

let box: Sandbox;
/** TMPDIR for doctor runs: where its throwaway workspace goes, so a test can see it was removed. */
let scratch: string;
beforeAll(() => {
  box = sandbox();
  scratch = join(box.dir, "tmp");
  mkdirSync(scratch);
});
afterAll(() => box.cleanup());

interface Check {
  name: string;
  status: string;
  detail: string;
  hint?: string;
  alternatives?: string[];
}

const NAMES = ["binary", "runtime home", "database", "git", "pty", "process identity", "workspace helper", "containment", "sandbox tools"];
/** The network proof's lines after them (operator/network-check.ts): Linux with bwrap runs it; without bwrap it is skipped; macOS shows none unless an allowlist is configured. */
const NETWORK = !IS_LINUX ? [] : Bun.which("bwrap") ? ["network allowed", "network refused", "network metadata", "network bypass"] : ["network policy"];

const DESCRIBE = JSON.stringify({ protocolVersion: 1, version: 1, capabilities: ["files", "watch", "resolve-command"] });

/** A helper script that answers `describe` with `answer` (and records its argv and env in `seen`). */
function writeHelper(name: string, body: string): string {
  const path = join(box.dir, name);
  writeFileSync(path, body);
  chmodSync(path, 0o755);
  return path;
}

async function doctor(args: string[], env: Record<string, string> = {}) {
  return runIn(box, ["doctor", ...args], { env: { TMPDIR: scratch, ...env } });
}

async function doctorJson(args: string[], env: Record<string, string> = {}): Promise<Check[]> {
  const result = await doctor([...args, "--json"], env);
  return (JSON.parse(result.stdout) as { checks: Check[] }).checks;
}

async function homeCheck(home: string): Promise<Check> {
  return (await doctorJson(["--home", home])).find((check) => check.name === "runtime home")!;
}

/** Every fix line of a check: the hint and its alternatives. */
function fixes(check: Check): string[] {
  return [check.hint, ...(check.alternatives ?? [])].filter((line): line is string => line !== undefined);
}

/** A fix line is a command or a comment the shell parses without redirections or substitutions. */
function expectSafeToPaste(line: string): void {
  expect(line).not.toMatch(/[<>`]|\$\(/);
  const parsed = Bun.spawnSync(["sh", "-n", "-c", line]);
  expect(parsed.exitCode).toBe(0);
}

describe("doctor", () => {
  test("passes on this host: every required check ✓, exit 0", async () => {
    const result = await doctor(["--home", box.home]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    for (const name of ["binary", "runtime home", "database", "git", "pty", "process identity"]) {
      expect(result.stdout).toMatch(new RegExp(`^✓ ${name} +\\S`, "m"));
    }
    expect(result.stdout).toContain("all required checks passed");
    expect(result.stdout).not.toContain("✗");
    // Not a terminal: no colour.
    expect(result.stdout).not.toContain("\x1b[");
  });

  test("--json: one document with every check in order, ok true", async () => {
    const result = await doctor(["--home", box.home, "--json"]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { ok: boolean; checks: Check[] };
    expect(report.ok).toBe(true);
    expect(report.checks.map((check) => check.name)).toEqual([...NAMES, ...NETWORK]);
    expect(report.checks.find((check) => check.name === "git")!.detail).toMatch(/git version \d+\.\d+/);
  });

  test("a PATH without git fails the git check with an install hint, exit 1", async () => {
    const result = await doctor(["--home", box.home], { PATH: join(box.dir, "empty-bin") });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^✗ git +git not found on PATH/m);
    expect(result.stdout).toMatch(/fix: # install git 2\.31 or newer \(.*\) on the PATH the Paseo daemon runs with/);
    expect(result.stdout).toContain("1 required check(s) failed: git");
    // The helper cannot be judged without a workspace to run it in: skipped, not blamed.
    const helper = writeHelper("git-less-helper", `#!/bin/sh\necho '${DESCRIBE}'\n`);
    const check = (await doctorJson(["--home", box.home, "--helper-path", helper], { PATH: join(box.dir, "empty-bin") })).find((c) => c.name === "workspace helper")!;
    expect(check.status).toBe("skip");
    expect(check.detail).toContain("its describe was not run: create of a throwaway workspace failed: git was not found");
    expect(check.hint).toBeUndefined();
  });

  // Where Linux has no usable cgroup v2 hierarchy, doctor rightly warns about containment: nothing is quiet.
  test.skipIf(IS_LINUX && withoutCgroups("operator/doctor.test.ts, --quiet with nothing to warn about"))("--quiet prints only failures and warnings, with the same exit status", async () => {
    const shownOnly = (stdout: string) => {
      for (const line of stdout.split("\n").filter(Boolean)) expect(line).toMatch(/^(✗ |! | +fix: | +or: )/);
    };
    const helper = writeHelper("quiet-helper", `#!/bin/sh\necho '${DESCRIBE}'\n`);
    const fine = await doctor(["--home", box.home, "--helper-path", helper, "-q"]);
    expect(fine.code).toBe(0);
    expect(fine.stderr).toBe("");
    expect(fine.stdout).toBe("");
    // Without a helper: its warning and fix lines, exit still 0.
    const warned = await doctor(["--home", box.home, "--quiet"], { PATH: "/usr/bin:/bin" });
    expect(warned.code).toBe(0);
    shownOnly(warned.stdout);
    expect(warned.stdout).toMatch(/^! workspace helper +workspace helper "paseo-workspace-helper" not found/m);
    // A failing check: its line and fix, nothing else that passed or was skipped, exit 1.
    const home = join(box.dir, "quiet-open-home");
    mkdirSync(home);
    chmodSync(home, 0o777);
    const failed = await doctor(["--home", home, "--quiet"]);
    expect(failed.code).toBe(1);
    shownOnly(failed.stdout);
    expect(failed.stdout).toMatch(/^✗ runtime home +.*group- or world-writable \(mode 777\).*\n +fix: chmod 700 /m);
    expect(failed.stdout).not.toContain("database");
  });

  describe.skipIf(missingTools("doctor with isolation sandbox", ["bwrap"]).length > 0)("with isolation sandbox configured", () => {
    test("the sandbox check starts a sandboxed /bin/true in place of the informational tools line", async () => {
      const result = await runIn(box, ["doctor", "--home", box.home, "--options-json", '{"isolation":"sandbox"}', "--json"]);
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout) as { ok: boolean; checks: Check[] };
      expect(report.checks.map((check) => check.name)).toEqual([...NAMES.slice(0, -1), "sandbox", ...NETWORK]);
      expect(report.checks.find((check) => check.name === "sandbox")).toMatchObject({ status: "ok", detail: expect.stringContaining("started a sandboxed /bin/true") });
    });

    test("the helper's describe runs in the sandbox, with the configured sandbox settings", async () => {
      // A helper that needs a file outside what the sandbox shows: fine unsandboxed, not sandboxed.
      const needs = join(box.dir, "helper-needs");
      mkdirSync(needs, { recursive: true });
      writeFileSync(join(needs, "config"), "x");
      const helper = writeHelper("needy-helper", `#!/bin/sh\ncat ${needs}/config >/dev/null || exit 4\necho '${DESCRIBE}'\n`);
      const checkWith = async (options: Record<string, unknown>) =>
        (await doctorJson(["--home", box.home, "--options-json", JSON.stringify({ helperPath: helper, ...options })])).find((c) => c.name === "workspace helper")!;
      expect((await checkWith({})).status).toBe("ok");
      const sandboxed = await checkWith({ isolation: "sandbox" });
      expect(sandboxed.status).toBe("fail");
      expect(sandboxed.detail).toContain("describe ended with exit 4");
      const shown = await checkWith({ isolation: "sandbox", sandboxReadOnly: [needs] });
      expect(shown).toMatchObject({ status: "ok", detail: expect.stringContaining("describe through exec in the sandbox: capabilities files, watch, resolve-command") });
    });

    test.skipIf(BUBBLEWRAP)("without bwrap on the PATH it fails, naming the package and the sysctls, exit 1", async () => {
      const result = await runIn(box, ["doctor", "--home", box.home, "--options-json", '{"isolation":"sandbox"}'], { env: { PATH: join(box.dir, "empty-bin") } });
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(/^✗ sandbox +isolation "sandbox" needs bubblewrap, and bwrap is not on the runtime's PATH/m);
      expect(result.stdout).toContain("kernel.unprivileged_userns_clone");
      expect(result.stdout).toMatch(/fix: # install bubblewrap on the daemon's PATH/);
    });
  });

  test("a fix said in words is a # comment, so every fix line is safe to paste", async () => {
    const options = { containment: "cgroup", cgroupRoot: join(box.dir, "no-such-cgroup") };
    const result = await runIn(box, ["doctor", "--home", box.home, "--options-json", JSON.stringify(options)]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^✗ containment +.*options\.cgroupRoot .*\n +fix: # point options\.cgroupRoot at /m);
  });

  test("--help shows the flags with their defaults, examples and environment", async () => {
    const result = await runIn(box, ["doctor", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toStartWith("Usage: paseo-host-runtime doctor ");
    expect(result.stdout).toMatch(/^ {6}--home DIR +the runtime home, absolute \(options\.stateDirectory\) \[default: /m);
    expect(result.stdout).toMatch(/^ {2}-q, --quiet +print only failures and warnings/m);
    expect(result.stdout).toContain("\nExamples:\n  paseo-host-runtime doctor ");
    expect(result.stdout).toMatch(/^ {2}NO_COLOR +/m);
  });
});

describe("doctor: advice for a bad runtime home is right, and safe to paste", () => {
  test("its own home, group/world-writable (mode 0777): chmod 700 of exactly that home", async () => {
    const home = join(box.dir, "open-home");
    mkdirSync(home);
    chmodSync(home, 0o777);
    const result = await doctor(["--home", home]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^✗ runtime home +runtime home .* is group- or world-writable \(mode 777\)$/m);
    expect(result.stdout).toContain(`fix: chmod 700 ${home}\n`);
    expect(result.stdout).toMatch(/^- database +not checked/m);
    expect(result.stdout).toContain("1 required check(s) failed: runtime home");
    expect(await homeCheck(home)).toMatchObject({ status: "fail", hint: `chmod 700 ${home}` });
  });

  test("--home /tmp: refused, and the fix is a home of your own, never chmod of /tmp", async () => {
    const before = statSync("/tmp").mode;
    const check = await homeCheck("/tmp");
    expect(check.status).toBe("fail");
    expect(check.detail).toContain("mode 1777");
    expect(check.detail).toContain("not a directory of its own");
    for (const line of fixes(check)) {
      expect(line).not.toContain("chmod");
      expectSafeToPaste(line);
    }
    const own = join(box.env.XDG_STATE_HOME!, "paseo-host-runtime");
    expect(check.hint).toBe(`install -d -m 700 ${own}   # a home of your own; then --home ${own} (options.stateDirectory)`);
    expect(statSync("/tmp").mode).toBe(before);
  });

  test("a world-writable directory that holds other files gets no chmod either", async () => {
    const shared = join(box.dir, "shared-dir");
    mkdirSync(shared);
    writeFileSync(join(shared, "someone-elses.txt"), "x");
    chmodSync(shared, 0o777);
    const check = await homeCheck(shared);
    expect(check.status).toBe("fail");
    expect(fixes(check).join("\n")).not.toContain("chmod");
  });

  test("a file passed as home: refused as not a directory, left alone, no chmod hint", async () => {
    const file = join(box.dir, "a-file");
    writeFileSync(file, "keep me\n");
    const check = await homeCheck(file);
    expect(check).toMatchObject({ status: "fail", detail: `runtime home ${file} is not a directory (it is left alone)` });
    for (const line of fixes(check)) {
      expect(line).not.toMatch(/chmod|rm /);
      expectSafeToPaste(line);
    }
    expect(readFileSync(file, "utf8")).toBe("keep me\n");
  });

  test("a home under a file fails in doctor (not ✓), and `new` says why instead of a raw ENOTDIR", async () => {
    const file = join(box.dir, "plain-file");
    writeFileSync(file, "x");
    const home = join(file, "home");
    const check = await homeCheck(home);
    expect(check).toMatchObject({ status: "fail", detail: `runtime home ${home} cannot be created: ${file} is not a directory` });
    for (const line of fixes(check)) expectSafeToPaste(line);
    const source = join(box.dir, "under-file-src");
    mkdirSync(source);
    const made = await runIn(box, ["new", "-w", "w", "--source", source, "--home", home]);
    expect(made.code).toBe(1);
    expect(made.stderr).toContain(`runtime home ${home} cannot be created: ${file} is not a directory`);
    expect(made.stderr).not.toContain("ENOTDIR");
  });

  test("--home '' is a usage error (exit 2), and nothing is written to the current directory", async () => {
    const cwd = join(box.dir, "cwd");
    mkdirSync(cwd);
    const result = await runIn(box, ["doctor", "--home", ""], { cwd, env: { TMPDIR: scratch } });
    expect(result.code).toBe(2);
    expect(result.stderr).toStartWith("paseo-host-runtime: --home must not be empty");
    expect(readdirSync(cwd)).toEqual([]);
  });

  test("a symlink as home: refused, and the fix names the directory it points to", async () => {
    const real = join(box.dir, "real-home");
    mkdirSync(real, { mode: 0o700 });
    const link = join(box.dir, "link-home");
    symlinkSync(real, link);
    const check = await homeCheck(link);
    expect(check.status).toBe("fail");
    expect(check.detail).toContain("is a symbolic link");
    expect(check.hint).toBe(`# give the directory itself: --home ${real}`);
  });

  test("a home that holds other files works, with a warning that it is not a directory of its own", async () => {
    const home = join(box.dir, "busy-home");
    mkdirSync(home, { mode: 0o700 });
    writeFileSync(join(home, "notes.txt"), "x");
    const check = await homeCheck(home);
    expect(check.status).toBe("warn");
    expect(check.detail).toContain("also holds files that are not the runtime's");
  });

  test("a home holding only what the runtime makes there is a home of its own: ssh/, mirrors/, seeds/, the store's companions, a key being written", async () => {
    const home = join(box.dir, "used-home");
    mkdirSync(home, { mode: 0o700 });
    for (const name of ["workspaces", "log", "ssh", "mirrors", "seeds"]) mkdirSync(join(home, name), { mode: 0o700 });
    for (const name of ["state.sqlite-wal", "state.sqlite-shm", "state.sqlite-journal", "state.sqlite.writer-lock", "input.key", ".input.key.4242.0123456789ab"]) writeFileSync(join(home, name), "");
    const check = await homeCheck(home);
    expect(check).toEqual({ name: "runtime home", status: "ok", detail: expect.stringMatching(new RegExp(`^${home} \\(mode 700, uid \\d+\\)$`)) });
    // Anything else still makes it a shared directory.
    writeFileSync(join(home, "ssh.txt"), "");
    expect((await homeCheck(home)).status).toBe("warn");
  });

  const NOT_AS_NOBODY = withoutRoot("operator/doctor.test.ts, hints for a non-root user", "the user is nobody, through setpriv") || missingTools("operator/doctor.test.ts, hints for a non-root user", ["setpriv"]).length > 0;

  test.skipIf(NOT_AS_NOBODY)("not root: a home that cannot be created gets `sudo install -d -m 700 -o USER`, or a home of your own", async () => {
    const userDir = join(box.dir, "nobody");
    mkdirSync(userDir);
    chownSync(userDir, 65534, 65534);
    chmodSync(box.dir, 0o755);
    const home = join(box.dir, "root-owned", "paseo-host-runtime");
    mkdirSync(join(box.dir, "root-owned"), { mode: 0o755 });
    const env = { ...box.env, HOME: userDir, XDG_STATE_HOME: join(userDir, "state"), TMPDIR: userDir };
    const run = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BIN, "doctor", "--home", home, "--json"], { env: { ...process.env, ...env } });
    const check = (JSON.parse(run.stdout.toString()) as { checks: Check[] }).checks.find((c) => c.name === "runtime home")!;
    expect(check.status).toBe("fail");
    expect(check.detail).toContain("is not writable by this user (uid 65534)");
    expect(check.hint).toBe(`sudo install -d -m 700 -o nobody ${home}`);
    expect(check.alternatives).toEqual([`install -d -m 700 ${join(userDir, "state", "paseo-host-runtime")}   # a home of your own; then --home ${join(userDir, "state", "paseo-host-runtime")} (options.stateDirectory)`]);
    for (const line of fixes(check)) expectSafeToPaste(line);
    // A root-owned home with state in it: check as its owner, never chown it.
    const rootHome = join(box.dir, "root-home");
    mkdirSync(rootHome, { mode: 0o700 });
    writeFileSync(storePath(rootHome), "");
    chmodSync(rootHome, 0o755);
    const owned = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BIN, "doctor", "--home", rootHome, "--json"], { env: { ...process.env, ...env } });
    const ownedCheck = (JSON.parse(owned.stdout.toString()) as { checks: Check[] }).checks.find((c) => c.name === "runtime home")!;
    expect(ownedCheck.detail).toContain("is owned by uid 0, not by this user (uid 65534)");
    expect(ownedCheck.hint).toBe(`sudo -u '#0' ${BIN} doctor --home ${rootHome}   # check as the user who owns it (the daemon's?)`);
    expect(fixes(ownedCheck).join("\n")).not.toContain("chown");
    chmodSync(box.dir, 0o700);
  });
});

describe("doctor: the helper's describe, run through the runtime", () => {
  test("a working helper: ✓ with its capabilities, and the throwaway workspace is gone after", async () => {
    const helper = writeHelper("good-helper", `#!/bin/sh\n[ "$1" = describe ] && [ "$(pwd)" != / ] && echo '${DESCRIBE}'\n`);
    const result = await doctor(["--home", box.home, "--helper-path", helper]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^✓ workspace helper +${helper} \\(from options\\.helperPath\\): describe through exec: capabilities files, watch, resolve-command$`, "m"));
    expect(readdirSync(scratch)).toEqual([]);
    expect(existsSync(box.home)).toBe(false);
  });

  test("a JavaScript helper runs on the embedded engine", async () => {
    const helper = writeHelper("helper.mjs", `#!/usr/bin/env node\nif (process.argv[2] === "describe") console.log(${JSON.stringify(DESCRIBE)});\n`);
    const result = await doctor(["--home", box.home, "--helper-path", helper]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^✓ workspace helper +${helper} \\(from options\\.helperPath, JavaScript run by the embedded engine\\): describe through exec`, "m"));
  });

  test("a helper without the capabilities the daemon requires fails, naming the missing ones", async () => {
    const helper = writeHelper("old-helper", `#!/bin/sh\necho '{"protocolVersion":1,"version":1,"capabilities":["files"]}'\n`);
    const check = (await doctorJson(["--home", box.home, "--helper-path", helper])).find((c) => c.name === "workspace helper")!;
    expect(check.status).toBe("fail");
    expect(check.detail).toContain("capabilities files; missing watch, resolve-command");
    expect(check.hint).toContain(" --helper-from PASEO_CHECKOUT/packages/workspace-helper/src/executable.mjs --helper-sha256 HEX   # ");
    expect(check.alternatives![0]).toStartWith('# set "helperPath"');
    expect(readdirSync(scratch)).toEqual([]);
  });

  test("a helper whose describe fails: ✗ with its exit and stderr", async () => {
    const helper = writeHelper("broken-helper", "#!/bin/sh\necho 'helper: cannot start' >&2\nexit 3\n");
    const check = (await doctorJson(["--home", box.home, "--helper-path", helper])).find((c) => c.name === "workspace helper")!;
    expect(check).toMatchObject({ status: "fail" });
    expect(check.detail).toContain("describe ended with exit 3: helper: cannot start");
    expect(readdirSync(scratch)).toEqual([]);
  });

  test("no helper: a warning that names what is missing and the installer line that fixes it", async () => {
    const check = (await doctorJson(["--home", box.home], { PATH: "/usr/bin:/bin" })).find((c) => c.name === "workspace helper")!;
    expect(check.status).toBe("warn");
    expect(check.detail).toContain('workspace helper "paseo-workspace-helper" not found');
    // Paseo's helper from a checkout of its repository (it is not on npm yet), into the directory of this binary, from the release site of this version.
    const dir = join(import.meta.dir, "..", "..", "dist");
    const site = "https://github.com/getpaseo/paseo-host-runtime/releases";
    expect(check.hint).toMatch(new RegExp(`^curl -fsSL ${site}/(download/v\\S+|latest/download)/install\\.sh \\| sh -s -- (--version \\S+ )?--dir ${dir} --helper-from PASEO_CHECKOUT/packages/workspace-helper/src/executable\\.mjs --helper-sha256 HEX {3}# the helper's one file, from a checkout of github\\.com/getpaseo/paseo`));
    expect(check.alternatives![0]).toStartWith('# set "helperPath" (absolute)');
    expect(JSON.stringify(check)).not.toContain("--helper-npm");
    for (const line of fixes(check)) expectSafeToPaste(line);
  });

  test("the install lines name the release site in use: PASEO_HOST_RUNTIME_BASE_URL, else the one install.sh recorded beside the binary", async () => {
    const mirror = "http://mirror.example:8000/paseo";
    const named = (await doctorJson(["--home", box.home], { PATH: "/usr/bin:/bin", PASEO_HOST_RUNTIME_BASE_URL: `${mirror}/` })).find((c) => c.name === "workspace helper")!;
    for (const line of fixes(named).filter((fix) => fix.startsWith("curl"))) expect(line).toStartWith(`curl -fsSL ${mirror}/`);
    // A binary installed from a mirror: install.sh's manifest beside it says where from.
    const installed = join(box.dir, "installed-bin");
    mkdirSync(installed);
    try {
      linkSync(BIN, join(installed, "paseo-host-runtime"));
    } catch {
      copyFileSync(BIN, join(installed, "paseo-host-runtime"));
    }
    writeFileSync(join(installed, ".paseo-host-runtime.installed"), `version 0.1.0\nplatform linux-x64\nbase http://recorded.example/releases\n`);
    const run = Bun.spawnSync([join(installed, "paseo-host-runtime"), "doctor", "--home", box.home, "--json"], { env: { ...box.env, TMPDIR: scratch, PATH: "/usr/bin:/bin" } });
    const recorded = (JSON.parse(run.stdout.toString()) as { checks: Check[] }).checks.find((c) => c.name === "workspace helper")!;
    expect(recorded.hint).toStartWith("curl -fsSL http://recorded.example/releases/");
    // The mirror's install.sh defaults to the public site: the line names the mirror to it too, so it works pasted.
    expect(recorded.hint).toContain(".sh | PASEO_HOST_RUNTIME_BASE_URL=http://recorded.example/releases sh -s -- ");
    expect(recorded.hint).toContain(` --dir ${installed} --helper-from `);
    expect(fixes(recorded).join("\n")).not.toContain("github.com/getpaseo/paseo-host-runtime");
  });
});

describe("doctor output: NO_COLOR, terminals and the locale", () => {
  test("LANG=C: ASCII marks instead of ✓ ✗", async () => {
    const result = await doctor(["--home", box.home], { LC_ALL: "", LC_CTYPE: "", LANG: "C" });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ok {3}binary +paseo-host-runtime /m);
    expect(result.stdout).not.toMatch(/[✓✗·]/);
    expect(result.stdout).toMatch(/^[\x00-\x7f]*$/);
  });

  test("on a terminal the marks are coloured; NO_COLOR turns colour off", async () => {
    const env = { ...box.env, TMPDIR: scratch, TERM: "xterm" };
    const coloured = await runOnTerminal(["doctor", "--home", box.home], { env });
    expect(coloured.code).toBe(0);
    expect(coloured.output).toContain("\x1b[32m✓\x1b[0m binary");
    const plain = await runOnTerminal(["doctor", "--home", box.home], { env: { ...env, NO_COLOR: "1" } });
    expect(plain.code).toBe(0);
    expect(plain.output).toContain("✓ binary");
    expect(plain.output).not.toContain("\x1b[");
  });
});
