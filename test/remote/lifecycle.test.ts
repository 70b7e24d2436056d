/**
 * The workspace lifecycle through `--remote`, against a real sshd on 127.0.0.1: every answer
 * is the one the remote binary gives, the same bytes a local runtime gives (paths aside), and
 * sources on the daemon's machine travel as committed git content only.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { createInput, ok, op, remoteOp } from "../support/operation.ts";
import { repoLab, git, makeRemote } from "../support/git.ts";
import type { Lab } from "../../kit/scratch.ts";
import { openDatabase } from "../../src/store/db.ts";
import { placementsOf } from "../../src/store/placements.ts";
import { linuxOnly } from "../support/platform.ts";
import { withoutSsh } from "../support/tools.ts";
import { storePath } from "../support/store.ts";

/** Set where the tests marked with it cannot run: they need Linux (the tests' own sshd on 127.0.0.1 and /proc). */
const NO_SSHD = linuxOnly("remote/lifecycle.test.ts", "the tests' own sshd on 127.0.0.1 and /proc") || withoutSsh("remote/lifecycle.test.ts");

let lab: SshLab;
// Without sshd every block below is skipped, and there is nothing to start or stop.
if (!NO_SSHD) {
  beforeAll(async () => {
    lab = await startSshd();
  });
  afterAll(async () => await lab.stop());
}

let t: Lab;
let repo: string;
let n = 0;
let id: string;
beforeEach(() => {
  ({ t, repo } = repoLab("phr-remote-life-"));
  id = `rw-${process.pid}-${++n}`;
});
afterEach(() => t.cleanup());

const ENV = { PASEO_SOURCE_CHECKOUT_PATH: ".", PASEO_ROOT_PATH: ".", PASEO_WORKTREE_PATH: "." };
const REMOTE_OWNER = `default@${hostname()}`;

/** The response with its placement paths replaced, to compare a remote answer with a local one. */
function withoutPaths(json: any): any {
  const copy = structuredClone(json);
  const placement = copy.placement ?? copy.inspection?.placement;
  if (placement) placement.cwd = "<cwd>";
  return copy;
}

function placements(): Map<string, string> {
  const db = openDatabase(storePath(lab.localHome));
  try {
    return placementsOf(db, "default");
  } finally {
    db.close();
  }
}

describe.skipIf(NO_SSHD)("describe", () => {
  test("is the remote binary's own answer, byte for byte what a local runtime prints", async () => {
    const local = await runBinary(["describe"]);
    const remote = await runBinary([...lab.prefix, "describe"]);
    expect(remote.code).toBe(0);
    expect(remote.stdout).toBe(local.stdout);
    expect(remote.stdout).toBe('{"protocolVersion":1,"modes":["pipes","pty"],"reconcile":true}\n');
  });
});

describe.skipIf(NO_SSHD)("a host-directory source travels as committed content", () => {
  test("branch placement: create, inspect, pause, resume, destroy answer like a local runtime, in the remote home", async () => {
    writeFileSync(join(repo, "README.md"), "uncommitted edit\n");
    writeFileSync(join(repo, "untracked.txt"), "not committed\n");
    git(repo, "remote", "add", "origin", "https://example.invalid/team/project.git");
    git(repo, "remote", "add", "secret", "https://user:token@example.invalid/x.git");
    const input = createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `agent-${n}`, baseRef: "main" });
    const created = await remoteOp(lab, "create", id, { input, options: lab.options });
    expect(created.code).toBe(0);
    expect(created.json.state.lifecycleEnvironment).toEqual({ ...ENV, PASEO_BRANCH_NAME: `agent-${n}` });
    // No hostVisiblePath: the files are not on the daemon's host.
    expect(Object.keys(created.json.placement)).toEqual(["cwd"]);
    const root: string = created.json.placement.cwd;
    expect(root.startsWith(join(lab.remoteHome, "workspaces") + "/")).toBe(true);
    expect(readFileSync(join(root, "README.md"), "utf8")).toBe("hello\n");
    expect(existsSync(join(root, "untracked.txt"))).toBe(false);
    expect(git(root, "rev-parse", "HEAD")).toBe(git(repo, "rev-parse", "main"));
    // Work can go back to the project's forge; a remote with credentials never travels.
    expect(git(root, "remote", "get-url", "origin")).toBe("https://example.invalid/team/project.git");
    expect(git(root, "remote").split("\n")).not.toContain("secret");
    expect(placements().get(id)).toBe(`root@127.0.0.1:${lab.port}`);

    const inspected = ok(await remoteOp(lab, "inspect", id, { options: lab.options }));
    expect(inspected).toEqual({ type: "inspection", protocolVersion: 1, inspection: { status: "ready", state: created.json.state, placement: created.json.placement } });
    expect(ok(await remoteOp(lab, "pause", id, { options: lab.options }))).toEqual({ type: "ok", protocolVersion: 1 });
    expect(ok(await remoteOp(lab, "inspect", id, { options: lab.options })).inspection.status).toBe("paused");
    const resumed = ok(await remoteOp(lab, "resume", id, { options: lab.options }));
    expect(resumed).toEqual({ type: "state", protocolVersion: 1, state: created.json.state, placement: created.json.placement });
    const destroyed = await remoteOp(lab, "destroy", id, { options: lab.options });
    expect(destroyed.stdout).toBe('{"type":"ok","protocolVersion":1}\n');
    expect(existsSync(root)).toBe(false);
    expect(ok(await remoteOp(lab, "inspect", id, { options: lab.options })).inspection).toEqual({ status: "missing" });
    expect(placements().has(id)).toBe(false);
    // The daemon-side repository was never touched.
    expect(git(repo, "worktree", "list").split("\n")).toHaveLength(1);
    expect(git(repo, "branch", "--list", `agent-${n}`)).toBe("");
    // And a local runtime answers the same create with the same bytes, paths aside.
    const local = ok(await op("create", id, { input, options: { ...t.options, exposeHostVisiblePath: false } }));
    expect(withoutPaths(created.json)).toEqual(withoutPaths(local));
  });

  test("existing placement: a private clone of the current commit and branch; checkout placement: that ref", async () => {
    git(repo, "checkout", "-q", "feature");
    const existing = ok(await remoteOp(lab, "create", id, { input: createInput(id, { kind: "host-directory", path: join(repo, "app") }), options: lab.options }));
    const root: string = existing.placement.cwd;
    expect(root.endsWith("/app")).toBe(true);
    expect(readFileSync(join(root, "..", "feature.txt"), "utf8")).toBe("feature\n");
    expect(existing.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("feature");
    const other = `${id}-co`;
    const checkout = ok(await remoteOp(lab, "create", other, { input: createInput(other, { kind: "host-directory", path: repo }, { kind: "checkout", ref: "v1" }), options: lab.options }));
    expect(existsSync(join(checkout.placement.cwd, "feature.txt"))).toBe(false);
    expect(git(checkout.placement.cwd, "rev-parse", "HEAD")).toBe(git(repo, "rev-parse", "v1"));
    for (const w of [id, other]) ok(await remoteOp(lab, "destroy", w, { options: lab.options }));
  });

  test("a second create ships new commits; a branch a remote worktree has checked out is never moved", async () => {
    const first = ok(await remoteOp(lab, "create", id, { input: createInput(id, { kind: "host-directory", path: repo }, { kind: "checkout", ref: "feature" }), options: lab.options }));
    const worktreeHead = git(first.placement.cwd, "rev-parse", "HEAD");
    git(repo, "checkout", "-q", "feature");
    writeFileSync(join(repo, "later.txt"), "later\n");
    git(repo, "add", ".");
    git(repo, "commit", "-q", "-m", "later");
    git(repo, "checkout", "-q", "main");
    git(repo, "merge", "-q", "--ff-only", "feature");
    const second = `${id}-2`;
    const json = ok(await remoteOp(lab, "create", second, { input: createInput(second, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `b-${n}`, baseRef: "main" }), options: lab.options }));
    expect(readFileSync(join(json.placement.cwd, "later.txt"), "utf8")).toBe("later\n");
    expect(git(first.placement.cwd, "rev-parse", "HEAD")).toBe(worktreeHead);
    // The same create again is the same workspace (idempotent), not a second one.
    const again = ok(await remoteOp(lab, "create", second, { input: createInput(second, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `b-${n}`, baseRef: "main" }), options: lab.options }));
    expect(again).toEqual(json);
    for (const w of [id, second]) ok(await remoteOp(lab, "destroy", w, { options: lab.options }));
  });

  test("seedPaseoConfigFrom: the daemon-side paseo.json is copied into the remote workspace", async () => {
    const seed = join(t.dir, "seed");
    mkdirSync(seed);
    writeFileSync(join(seed, "paseo.json"), '{"setup":["true"]}\n');
    const input = createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `s-${n}`, baseRef: "main" }, { seedPaseoConfigFrom: seed });
    const json = ok(await remoteOp(lab, "create", id, { input, options: lab.options }));
    expect(readFileSync(join(json.placement.cwd, "paseo.json"), "utf8")).toBe('{"setup":["true"]}\n');
    ok(await remoteOp(lab, "destroy", id, { options: lab.options }));
  });

  test("a plain directory has no committed content: refused with a clear message, nothing placed", async () => {
    const plain = join(t.dir, "plain");
    mkdirSync(plain);
    const result = await remoteOp(lab, "create", id, { input: createInput(id, { kind: "host-directory", path: plain }), options: lab.options });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("is not in a git repository");
    expect(ok(await remoteOp(lab, "inspect", id, { options: lab.options })).inspection).toEqual({ status: "missing" });
  });
});

describe.skipIf(NO_SSHD)("the later dialect travels as it came", () => {
  test("create, inspect, destroy with runtimeInstanceId and a `directory` source: the remote answers in that dialect, like a local runtime", async () => {
    const instance = "ab".repeat(32);
    const input = createInput(id, { kind: "directory", path: repo }, { kind: "branch", branchName: `later-${n}`, baseRef: "main" });
    const created = await remoteOp(lab, "create", id, { runtimeInstanceId: instance, input, options: lab.options });
    expect(created.code).toBe(0);
    expect(created.json.materializedFreshContent).toBe(true);
    expect(Object.keys(created.json.placement)).toEqual(["cwd"]);
    const again = ok(await remoteOp(lab, "create", id, { runtimeInstanceId: instance, input, options: lab.options }));
    expect(again.materializedFreshContent).toBe(false);
    expect(ok(await remoteOp(lab, "inspect", id, { runtimeInstanceId: instance, options: lab.options })).inspection.status).toBe("ready");
    // A request of the other dialect is refused by the remote side, as a local runtime refuses it.
    const seed = await remoteOp(lab, "inspect", id, { options: lab.options });
    expect(seed.code).toBe(1);
    expect(seed.stderr).toContain("dialect");
    expect(ok(await remoteOp(lab, "destroy", id, { runtimeInstanceId: instance, options: lab.options }))).toEqual({ type: "ok", protocolVersion: 1 });
    const local = ok(await op("create", id, { runtimeInstanceId: instance, input, options: t.options }));
    expect(withoutPaths(created.json)).toEqual(withoutPaths(local));
  });
});

describe.skipIf(NO_SSHD)("a git URL source is cloned on the remote host", () => {
  test("create clones there; reconcile destroys only the unlisted workspace and forgets its placement", async () => {
    const url = makeRemote(repo, join(t.dir, "origin.git"));
    const ids = [id, `${id}-b`];
    for (const w of ids) {
      const json = ok(await remoteOp(lab, "create", w, { input: createInput(w, { kind: "git", url, revision: "feature" }), options: lab.options }));
      expect(json.placement.cwd.startsWith(join(lab.remoteHome, "workspaces") + "/")).toBe(true);
      expect(readFileSync(join(json.placement.cwd, "feature.txt"), "utf8")).toBe("feature\n");
    }
    const result = await remoteOp(lab, "reconcile", null, { options: lab.options, workspaceIds: [ids[0]] });
    expect(result.stdout).toBe('{"type":"ok","protocolVersion":1}\n');
    expect(ok(await remoteOp(lab, "inspect", ids[0]!, { options: lab.options })).inspection.status).toBe("ready");
    expect(ok(await remoteOp(lab, "inspect", ids[1]!, { options: lab.options })).inspection).toEqual({ status: "missing" });
    expect(placements().has(ids[1]!)).toBe(false);
    ok(await remoteOp(lab, "destroy", ids[0]!, { options: lab.options }));
  });
});

describe.skipIf(NO_SSHD)("the remote side gets its own options, never the local ones", () => {
  test("the remote owner defaults to <owner>@<this host>; remote.owner overrides it", async () => {
    const input = createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `o-${n}`, baseRef: "main" });
    ok(await remoteOp(lab, "create", id, { input, options: lab.options }));
    const ls = await runBinary(["ls", "--json", "--home", lab.remoteHome]);
    const mine = JSON.parse(ls.stdout).workspaces.find((w: { workspaceId: string }) => w.workspaceId === id);
    expect(mine.owner).toBe(REMOTE_OWNER);
    // Another remote owner may not touch it: the remote refuses, and says why.
    const foreign = await remoteOp(lab, "destroy", id, { options: { ...lab.options, remote: { ...lab.options.remote, owner: "someone-else" } } });
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain("ownership mismatch");
    ok(await remoteOp(lab, "destroy", id, { options: lab.options }));
  });
});

describe.skipIf(NO_SSHD)("bad configuration fails before anything is contacted", () => {
  test.each([
    ["ssh://", "the host must be"],
    ["ssh://-oProxyCommand=touch%20x", "must not contain"],
    ["ssh://-oProxyCommand=x", "the host must be"],
    ["ssh://user:secret@host", "the user must be"],
    ["ssh://-l@host", "the user must be"],
    ["ssh://host:0", "the port must be"],
    ["http://host", "must start with ssh://"],
    ["ssh://host/../x", "plain absolute path"],
  ])("--remote %j is a usage error (exit 2)", async (url, message) => {
    const result = await runBinary(["--remote", url, "describe"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain("Usage: paseo-host-runtime --remote");
    // The grammar is not a credential: only the URL given is redacted.
    expect(result.stderr).toContain("a remote must be ssh://[user@]host[:port][/absolute/path/to/paseo-host-runtime], got ");
    expect(result.stderr).not.toContain("***@]");
    expect(result.stderr).not.toContain("secret");
  });

  test("remote doctor without a host: its usage text keeps the grammar", async () => {
    const result = await runBinary(["remote", "doctor"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("paseo-host-runtime: remote doctor needs the host: ssh://[user@]host[:port]\n");
  });

  test("the internal remote halves are left out of --help", async () => {
    const help = await runBinary(["--help"]);
    expect(help.stdout).toContain("--remote ssh://");
    expect(help.stdout).toContain("remote doctor");
    expect(help.stdout).not.toContain("exec-remote");
    expect(help.stdout).not.toContain("receive-source");
  });

  test("a command that takes no runtime (config check, remote doctor) or an unknown option after --remote is a usage error", async () => {
    for (const command of [["config", "check"], ["remote", "doctor", lab.url], ["frobnicate"]]) {
      const refused = await runBinary([...lab.prefix, ...command]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("--remote carries the protocol operations");
    }
    expect((await runBinary([...lab.prefix, "inspect", "--workspace-id", "w", "--bogus", "1"])).code).toBe(2);
    expect((await runBinary(["--ssh-config", lab.configFile, "describe"])).code).toBe(2);
    expect((await runBinary(["--remote", lab.url, "--ssh-config", "relative", "describe"])).code).toBe(2);
  });

  test("a bad options.remote is refused naming the key, and no ssh runs", async () => {
    const result = await remoteOp(lab, "inspect", id, { options: { ...lab.options, remote: { hostz: [] } } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('options.remote has an unknown key "hostz"');
  });

  test("an unreachable host: exit 1 and a line that says ssh failed", async () => {
    const closed = ["--remote", `ssh://root@127.0.0.1:1${lab.url.slice(lab.url.indexOf("/", 6))}`, "--ssh-config", lab.configFile];
    const result = await remoteOp(lab, "inspect", id, { options: lab.options }, closed);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("failed (exit 255)");
  });

  test("a remote binary that is not there: the shell's 127 comes back, with what to do", async () => {
    const missing = ["--remote", `ssh://root@127.0.0.1:${lab.port}/nonexistent/paseo-host-runtime`, "--ssh-config", lab.configFile];
    const result = await remoteOp(lab, "inspect", id, { options: lab.options }, missing);
    expect(result.code).toBe(127);
    expect(result.stderr).toContain("install paseo-host-runtime there");
  });
});

describe.skipIf(NO_SSHD)("remote doctor", () => {
  test("checks ssh, the remote binary and version, the remote doctor and the round trip", async () => {
    const result = await runBinary(["remote", "doctor", lab.url, "--ssh-config", lab.configFile, "--remote-home", lab.remoteHome, "--json"]);
    const report = JSON.parse(result.stdout);
    expect(report.checks.filter((check: { status: string }) => check.status === "fail")).toEqual([]);
    const names = report.checks.map((check: { name: string }) => check.name);
    expect(names).toEqual(expect.arrayContaining(["ssh client", "ssh connection", "remote binary", "remote runtime home", "remote git", "round trip"]));
    // One line for the binary: its version, said once, with the path the remote doctor runs from.
    expect(names.filter((name: string) => name === "remote binary" || name === "remote version")).toEqual(["remote binary"]);
    const binary = report.checks.find((check: { name: string }) => check.name === "remote binary");
    expect(binary.detail).toMatch(/^paseo-host-runtime \S+ \(\S+, bun \S+\) at \//);
    expect(result.code).toBe(report.ok ? 0 : 1);
  });

  test("doctor of a --remote runtime with a network allowlist proves that allowlist on the host, where its workloads run (a wildcard too wide fails the refused line there)", async () => {
    const options = { ...lab.options, isolation: "sandbox", network: { allow: ["*.invalid"] } };
    const result = await runBinary([...lab.prefix, "doctor", "--json", "--options-json", JSON.stringify(options)]);
    const report = JSON.parse(result.stdout) as { hosts: { checks: { name: string; status: string; detail: string }[] }[] };
    const network = report.hosts[0]!.checks.filter((check) => check.name.startsWith("remote network"));
    expect(network.map((check) => [check.name, check.status])).toEqual([
      ["remote network allowed", "ok"],
      ["remote network refused", "fail"],
      ["remote network metadata", "ok"],
      ["remote network bypass", "ok"],
    ]);
    expect(result.code).toBe(1);
  });

  test("its text is doctor's: words instead of ✓ under a locale that is not UTF-8, marks under one that is", async () => {
    const args = ["remote", "doctor", lab.url, "--ssh-config", lab.configFile, "--remote-home", lab.remoteHome];
    const plain = await runBinary(args, { env: { LC_ALL: "", LC_CTYPE: "", LANG: "C", NO_COLOR: "1" } });
    expect(plain.stdout).toMatch(/^ok {3}ssh client +/m);
    expect(plain.stdout).toMatch(/^ok {3}remote binary +paseo-host-runtime /m);
    expect(plain.stdout).toMatch(/^[\x00-\x7f]*$/);
    const marked = await runBinary(args, { env: { LC_ALL: "C.UTF-8", NO_COLOR: "1" } });
    expect(marked.stdout).toMatch(/^✓ ssh client +/m);
    expect(marked.stdout).toMatch(/\nall required checks passed( \(\d+ warning\(s\)\))?\n$/);
  });

  test("a remote binary that is not there: the fix installs this version there, from the release site in use", async () => {
    const url = `ssh://root@127.0.0.1:${lab.port}/nonexistent/paseo-host-runtime`;
    const result = await runBinary(["remote", "doctor", url, "--ssh-config", lab.configFile, "--json"], { env: { PASEO_HOST_RUNTIME_BASE_URL: "http://mirror.example/releases" } });
    expect(result.code).toBe(1);
    const binary = JSON.parse(result.stdout).checks.find((check: { name: string }) => check.name === "remote binary");
    expect(binary.status).toBe("fail");
    // Pasted here as printed: the runtime's ssh config (its known hosts), the mirror named to the script too, into the URL's directory.
    const config = lab.configFile.replaceAll(".", "\\.");
    expect(binary.hint).toMatch(new RegExp(`^ssh -F ${config} -p ${lab.port} root@127\\.0\\.0\\.1 'curl -fsSL http://mirror\\.example/releases/(download/v[^/]+|latest/download)/install\\.sh \\| PASEO_HOST_RUNTIME_BASE_URL=http://mirror\\.example/releases sh -s --( --version \\S+)? --dir /nonexistent' {3}# install this version there$`));
  });

  test("the homes a remote workspace filled hold only the runtime's entries: ssh/ here, mirrors/ there, and doctor says so", async () => {
    const input = createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `doctor-${n}`, baseRef: "main" });
    expect((await remoteOp(lab, "create", id, { input, options: lab.options })).code).toBe(0);
    try {
      expect(readdirSync(lab.localHome)).toContain("ssh");
      expect(readdirSync(lab.remoteHome)).toContain("mirrors");
      const local = JSON.parse((await runBinary(["doctor", "--home", lab.localHome, "--json"])).stdout).checks.find((c: { name: string }) => c.name === "runtime home");
      expect(local).toMatchObject({ status: "ok" });
      const remote = await runBinary(["remote", "doctor", lab.url, "--ssh-config", lab.configFile, "--remote-home", lab.remoteHome, "--json"]);
      expect(JSON.parse(remote.stdout).checks.find((c: { name: string }) => c.name === "remote runtime home")).toMatchObject({ status: "ok" });
    } finally {
      await remoteOp(lab, "destroy", id, { options: lab.options });
    }
  });

  test("an unreachable host fails the ssh check (exit 1)", async () => {
    const result = await runBinary(["remote", "doctor", "ssh://root@127.0.0.1:1", "--ssh-config", lab.configFile, "--json"]);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout).checks.find((c: { name: string }) => c.name === "ssh connection").status).toBe("fail");
  });
});
