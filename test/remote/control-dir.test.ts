/**
 * Where `--remote` keeps its ssh control sockets, against a real sshd on 127.0.0.1 and the
 * compiled binary: a directory another user made first (or a symlink to one) leaves remote
 * calls working, without connection reuse, said once per call in the runtime log and by
 * `remote doctor`; XDG_RUNTIME_DIR, when it is this user's own, holds the socket.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { withoutRoot } from "../support/platform.ts";
import { withoutSsh } from "../support/tools.ts";
import { runtimeLogPath } from "../support/store.ts";

setDefaultTimeout(60_000);

const TAG = String(process.pid);
let scratch: { path: string; cleanup: () => void };
let lab: SshLab;

const WHAT = "remote/control-dir.test.ts, a control-socket directory another user made";

describe.skipIf(withoutSsh(WHAT) || withoutRoot(WHAT, "another user's directory is made with chown"))("a control-socket directory another user made", () => {
  beforeAll(async () => {
    scratch = tempDir("phr-remote-control-");
    lab = await startSshd();
  });

  afterAll(async () => {
    await lab.stop();
    scratch.cleanup();
  });

  const NOBODY = 65534;

  /** An inspect (of a workspace that does not exist) with `localHome` as the local runtime home and `env`. */
  function inspectWith(localHome: string, env: Record<string, string | undefined>) {
    const options = { ...lab.options, stateDirectory: localHome };
    return runBinary([...lab.prefix, "inspect", "--workspace-id", `squat-${TAG}`], { stdin: `${JSON.stringify({ protocolVersion: 1, options })}\n`, env });
  }

  function noReuseLines(localHome: string): Record<string, any>[] {
    const path = runtimeLogPath(localHome);
    if (!existsSync(path)) return [];
    return readFileSync(path, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line)).filter((entry) => entry.event === "no-connection-reuse");
  }

  test("<home>/ssh owned by another user, and XDG_RUNTIME_DIR's directory too: calls work without reuse, said once per call", async () => {
    const localHome = join(scratch.path, "squat-home");
    mkdirSync(join(localHome, "ssh"), { recursive: true, mode: 0o700 });
    chownSync(join(localHome, "ssh"), NOBODY, NOBODY);
    const runtime = join(scratch.path, "xdg");
    mkdirSync(join(runtime, "paseo-host-runtime"), { recursive: true, mode: 0o700 });
    chmodSync(runtime, 0o700);
    chownSync(join(runtime, "paseo-host-runtime"), NOBODY, NOBODY);
    const result = await inspectWith(localHome, { XDG_RUNTIME_DIR: runtime });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).inspection).toEqual({ status: "missing" });
    const lines = noReuseLines(localHome);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.message).toContain(`belongs to uid ${NOBODY}`);
    expect(lines[0]!.message).toContain("ControlMaster=no");
    // Nothing was bound in another user's directory.
    expect(readdirSync(join(localHome, "ssh"))).toEqual([]);
    expect(readdirSync(join(runtime, "paseo-host-runtime"))).toEqual([]);
    const doctor = await runBinary(["remote", "doctor", lab.url, "--ssh-config", lab.configFile, "--home", localHome, "--json"], { env: { XDG_RUNTIME_DIR: runtime } });
    const check = JSON.parse(doctor.stdout).checks.find((c: { name: string }) => c.name === "control sockets");
    expect(check).toMatchObject({ status: "warn" });
    expect(check.detail).toContain(`belongs to uid ${NOBODY}`);
    expect(check.hint).toContain("XDG_RUNTIME_DIR");
  });

  test("<home>/ssh a symlink to a directory another user owns: calls work without reuse", async () => {
    const localHome = join(scratch.path, "link-home");
    mkdirSync(localHome, { mode: 0o700 });
    const elsewhere = join(scratch.path, "elsewhere");
    mkdirSync(elsewhere, { mode: 0o700 });
    chownSync(elsewhere, NOBODY, NOBODY);
    symlinkSync(elsewhere, join(localHome, "ssh"));
    const result = await inspectWith(localHome, { XDG_RUNTIME_DIR: undefined });
    expect(result.code).toBe(0);
    expect(noReuseLines(localHome)[0]!.message).toContain("is a symbolic link");
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  test("XDG_RUNTIME_DIR of this user, mode 0700: the shared connection's socket is there", async () => {
    const localHome = join(scratch.path, "xdg-home");
    const runtime = join(scratch.path, "xdg-mine");
    mkdirSync(runtime, { mode: 0o700 });
    const result = await inspectWith(localHome, { XDG_RUNTIME_DIR: runtime });
    expect(result.code).toBe(0);
    expect(noReuseLines(localHome)).toEqual([]);
    const sockets = readdirSync(join(runtime, "paseo-host-runtime"));
    expect(sockets).toHaveLength(1);
    expect(existsSync(join(localHome, "ssh"))).toBe(false);
    Bun.spawnSync(["ssh", "-F", lab.configFile, "-o", `ControlPath=${join(runtime, "paseo-host-runtime", sockets[0]!)}`, "-O", "exit", "unused"], { stdout: "ignore", stderr: "ignore" });
  });
});
