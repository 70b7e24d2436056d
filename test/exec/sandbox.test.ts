/**
 * isolation "sandbox" (issue 12), driven like the daemon: what a sandboxed workload cannot
 * reach, what it still can do, that its end is mirrored exactly, that nothing but fds 0-2
 * reaches it, and that without a working bwrap nothing runs at all. Each escape is also tried
 * with isolation "none", where it succeeds: the checks can fail.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { listProcesses } from "../../src/platform/process.ts";
import { request, runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { PATH, envelope, newExecId } from "../../kit/envelope.ts";
import { startExec, type ExecOptions, type ExecResult } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { skipBecause, withoutCgroups } from "../support/platform.ts";
import { missingTools } from "../support/tools.ts";
import { create, createInput, ok, op } from "../support/operation.ts";
import { git, makeRepo } from "../support/git.ts";
import { cmdlineOf, descendants } from "../support/procs.ts";

const missing = missingTools("exec/sandbox.test.ts", ["bwrap", "git", "node"]);

let sandboxed: ReadyWorkspace;
let plain: ReadyWorkspace;
let outside: { path: string; cleanup: () => void };

// Without the tools every block below is skipped, and there is nothing to set up.
if (missing.length === 0) {
  beforeAll(async () => {
    sandboxed = await readyWorkspace("sandbox", "seed", { isolation: "sandbox" });
    plain = await readyWorkspace("sandbox-none");
    outside = tempDir("phr-sbx-outside-");
  });
  afterAll(() => {
    sandboxed?.cleanup();
    plain?.cleanup();
    outside?.cleanup();
  });
}

function run(ws: ReadyWorkspace, argv: string[], fields: Record<string, unknown> = {}, options: ExecOptions = {}): Promise<ExecResult> {
  const handle = startExec(ws.id, envelope(argv, { options: ws.options, env: { PATH }, ...fields }), options);
  handle.closeStdin();
  return handle.done;
}

const sh = (ws: ReadyWorkspace, script: string, fields: Record<string, unknown> = {}) => run(ws, ["/bin/sh", "-c", script], fields);
const out = (result: ExecResult) => result.stdout.toString();

describe.skipIf(missing.length > 0)("a sandboxed workload cannot reach the host", () => {
  test("a file planted in the daemon user's home cannot be read (without the sandbox it can)", async () => {
    const secret = join(homedir(), `phr-sandbox-secret-${process.pid}-${crypto.randomUUID()}`);
    writeFileSync(secret, "the daemon user's secret\n");
    try {
      const script = `cat ${secret} 2>/dev/null || echo unreadable; ls ${homedir()} >/dev/null 2>&1 || echo no-home`;
      expect(out(await sh(plain, script))).toBe("the daemon user's secret\n");
      const result = await sh(sandboxed, script);
      expect(result.code).toBe(0);
      expect(out(result)).toBe("unreadable\nno-home\n");
    } finally {
      rmSync(secret, { force: true });
    }
  });

  test("writes outside the workspace never reach the host; inside they do", async () => {
    const tag = crypto.randomUUID();
    const targets = [join(outside.path, "f"), `/tmp/phr-sbx-${tag}`, join(sandboxed.root, "..", `sibling-${tag}`), `/usr/phr-sbx-${tag}`, `/etc/phr-sbx-${tag}`];
    const script = `${targets.map((path) => `{ echo x > ${path}; } 2>/dev/null`).join("; ")}; echo inside > in-${tag}; echo done`;
    const result = await sh(sandboxed, script);
    expect(out(result)).toBe("done\n");
    expect(targets.filter((path) => existsSync(path))).toEqual([]);
    expect(readFileSync(join(sandboxed.root, `in-${tag}`), "utf8")).toBe("inside\n");
    // Without the sandbox the same script writes where it likes (the writable targets).
    await sh(plain, script);
    const written = targets.slice(0, 3).filter((path) => existsSync(path));
    for (const path of written) rmSync(path);
    expect(written.length).toBe(3);
  });

  test("host processes are invisible: its /proc is its own pid namespace", async () => {
    const tag = `${600 + Math.floor(Math.random() * 1000) / 1000}`;
    const host = Bun.spawn(["sleep", tag], { stdio: ["ignore", "ignore", "ignore"] });
    try {
      const script = `for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done`;
      expect(out(await sh(plain, script))).toContain(`sleep ${tag}`);
      const inside = out(await sh(sandboxed, script));
      expect(inside).not.toContain(`sleep ${tag}`);
      expect(inside).not.toContain("bun test");
      expect(readdirSync("/proc").filter((name) => /^\d+$/.test(name)).length).toBeGreaterThan(inside.trim().split("\n").length);
    } finally {
      host.kill("SIGKILL");
      await host.exited;
    }
  });

  test('with network "none" a loopback listener the test started cannot be reached; with the default network it can', async () => {
    const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {}, open(socket) { socket.end(); } } });
    try {
      const probe = `require("net").connect(${server.port}, "127.0.0.1").on("connect", () => { console.log("connected"); process.exit(0); }).on("error", (e) => { console.log(e.code); process.exit(3); })`;
      const shared = await run(sandboxed, ["node", "-e", probe]);
      expect(out(shared)).toBe("connected\n");
      const cut = await run(sandboxed, ["node", "-e", probe], { options: { ...sandboxed.options, network: "none" } });
      expect(cut.code).toBe(3);
      expect(out(cut)).toBe("ECONNREFUSED\n");
    } finally {
      server.stop(true);
    }
  });

  // Decided when the file loads: which of them this user can read outside (none: nothing to mask).
  const readable = ["/etc/shadow", "/etc/gshadow"].filter((path) => {
    try {
      readFileSync(path);
      return true;
    } catch {
      return false;
    }
  });
  const nothingToMask = skipBecause("exec/sandbox.test.ts, masked secrets of /etc", readable.length === 0 ? "this user cannot read /etc/shadow or /etc/gshadow outside either" : null);
  test.skipIf(nothingToMask)("secrets of /etc readable by the daemon's user (root here) are masked", async () => {
    const script = `${readable.map((path) => `cat ${path} >/dev/null 2>&1 && echo read || echo masked`).join("; ")}; test -r /etc/passwd && echo passwd`;
    expect(out(await sh(sandboxed, script))).toBe(`${readable.map(() => "masked\n").join("")}passwd\n`);
  });

  test("it holds no capability, even when the daemon runs as root", async () => {
    const script = "grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status";
    const inside = out(await sh(sandboxed, script));
    expect(inside).toBe("CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapAmb:\t0000000000000000\n");
    if (process.getuid?.() === 0) expect(out(await sh(plain, script))).not.toBe(inside);
  });

  test("sandboxReadOnly and sandboxReadWrite add host paths, each with its mode", async () => {
    const ro = join(outside.path, "ro");
    const rw = join(outside.path, "rw");
    mkdirSync(ro);
    mkdirSync(rw);
    writeFileSync(join(ro, "data"), "shared\n");
    // A workspace keeps the paths it was created with: an exec may not add any (sandbox/isolation.ts).
    const ws = await readyWorkspace("sandbox-paths", "seed", { isolation: "sandbox", sandboxReadOnly: [ro, "/no/such/dir"], sandboxReadWrite: [rw] });
    try {
      const options = { ...ws.options, sandboxReadOnly: [ro] };
      const result = await sh(ws, `cat ${ro}/data; { echo x > ${ro}/new; } 2>/dev/null || echo ro-refused; echo y > ${rw}/new && echo rw-written`, { options });
      expect(out(result)).toBe("shared\nro-refused\nrw-written\n");
      expect(existsSync(join(ro, "new"))).toBe(false);
      expect(readFileSync(join(rw, "new"), "utf8")).toBe("y\n");
      const missingPath = await sh(ws, "true", { options: { ...ws.options, sandboxReadOnly: ["/no/such/dir"] } });
      expect(missingPath.code).toBe(1);
      expect(missingPath.events).toEqual([]);
      expect(missingPath.stderr).toContain("options.sandboxReadOnly names /no/such/dir, which does not exist");
    } finally {
      ws.cleanup();
    }
  });
});

describe.skipIf(missing.length > 0)("confinement holds under the sandbox", () => {
  /** Race loops: modest by default, larger with PASEO_STRESS=1. */
  const TRIALS = process.env.PASEO_STRESS === "1" ? 400 : 40;

  test(`a root swapped for a symlink while execs launch never shows the workload another directory at the root's path (${TRIALS} trials)`, async () => {
    const ws = await readyWorkspace("sandbox-root-race", "seed", { isolation: "sandbox" });
    const decoy = join(ws.root, "..", "decoy");
    // /etc is visible inside the sandbox: binding the root by path would show it there.
    symlinkSync("/etc", decoy);
    const identity = (path: string) => {
      const stat = lstatSync(path, { bigint: true });
      return `${stat.dev}:${stat.ino}`;
    };
    const inside = identity(ws.root);
    const racer = Bun.spawn([process.execPath, join(import.meta.dir, "..", "support", "swap-racer.ts"), ws.root, decoy], { stdout: "pipe", stderr: "inherit" });
    const counts = { launched: 0, refused: 0, wrong: [] as string[] };
    try {
      const reader = racer.stdout.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain("racing");
      for (let i = 0; i < TRIALS; i += 4) {
        const results = await Promise.all(Array.from({ length: 4 }, () => run(ws, ["stat", "-c", "%d:%i", ".", ws.root])));
        for (const result of results) {
          if (result.events.length === 0 && result.code === 1) counts.refused++;
          else if (out(result) === `${inside}\n${inside}\n`) counts.launched++;
          else counts.wrong.push(`exit ${result.code}: ${out(result)} ${result.stderr}`);
        }
      }
    } finally {
      racer.kill("SIGKILL");
      await racer.exited;
      ws.cleanup();
    }
    console.log(`sandboxed root race, ${TRIALS} trials: ${JSON.stringify({ launched: counts.launched, refused: counts.refused, wrong: counts.wrong.length })}`);
    expect(counts.wrong).toEqual([]);
    expect(counts.launched).toBeGreaterThan(0);
    expect(counts.refused).toBeGreaterThan(0);
  }, 120_000);
});

describe.skipIf(missing.length > 0)("a sandboxed workload still does its work", () => {
  test("git, sh and node run inside the workspace", async () => {
    const identity = "-c user.name=t -c user.email=t@example.invalid";
    const script = `git init -q && echo a > a && git add a && git ${identity} commit -qm first && git log --format=%s; node -e 'console.log(6 * 7)'; sh -c 'echo sh'`;
    const result = await sh(sandboxed, script, { env: { PATH, GIT_CONFIG_NOSYSTEM: "1" } });
    expect(result.stderr).toBe("");
    expect(out(result)).toBe("first\n42\nsh\n");
    expect(git(sandboxed.root, "log", "--format=%s")).toBe("first");
  });

  test("in a worktree workspace git commits reach the repository; hooks and config written inside stay the workspace's own", async () => {
    const lab = tempDir("phr-sbx-repo-");
    try {
      const repo = makeRepo(join(lab.path, "repo"));
      const options = { stateDirectory: join(lab.path, "home"), isolation: "sandbox" };
      // A project below the repository's top: the workspace root is a subdirectory of the worktree.
      const json = ok(await create(options, createInput("wt", { kind: "host-directory", path: join(repo, "app") }, { kind: "branch", branchName: "topic", baseRef: "main" })));
      const root: string = json.placement.cwd;
      const ws: ReadyWorkspace = { id: "wt", home: options.stateDirectory, root, options, cgroupRoot: null, cleanup: () => {} };
      const identity = "-c user.name=t -c user.email=t@example.invalid";
      const script = [
        `echo change > sandboxed.txt && git add sandboxed.txt && git ${identity} commit -qm "from the sandbox" && echo committed`,
        `common=$(git rev-parse --git-common-dir)`,
        `mkdir -p "$common/hooks" && echo evil > "$common/hooks/post-checkout" && echo hook-written`,
        `git config core.fsmonitor evil && echo config-written`,
        `{ echo evil > ${join(repo, ".git", "hooks", "post-checkout")}; } 2>/dev/null || echo user-hooks-unreachable`,
      ].join("; ");
      const result = await sh(ws, script);
      expect(result.stderr).toBe("");
      expect(out(result)).toBe("committed\nhook-written\nconfig-written\nuser-hooks-unreachable\n");
      expect(git(repo, "log", "-1", "--format=%s", "topic")).toBe("from the sandbox");
      expect(existsSync(join(repo, ".git", "hooks", "post-checkout"))).toBe(false);
      expect(readFileSync(join(repo, ".git", "config"), "utf8")).not.toContain("evil");
      await op("destroy", "wt", { options });
    } finally {
      lab.cleanup();
    }
  });

  test("a JavaScript helper runs sandboxed on the embedded engine, with env {BUN_BE_BUN: 1}, and sees no home", async () => {
    const helper = join(outside.path, "helper.mjs");
    const secret = join(homedir(), `phr-sandbox-helper-${process.pid}-${crypto.randomUUID()}`);
    writeFileSync(secret, "secret\n");
    writeFileSync(
      helper,
      `#!/usr/bin/env node\nimport { existsSync } from "node:fs";\nconsole.log(JSON.stringify({ cwd: process.cwd(), env: process.env, home: existsSync(${JSON.stringify(secret)}) }));\n`,
    );
    try {
      const env = envelope(["paseo-workspace-helper", "describe"], { purpose: { kind: "workspace-helper" }, env: {}, options: { ...sandboxed.options, helperPath: helper } });
      const handle = startExec(sandboxed.id, env);
      handle.closeStdin();
      const result = await handle.done;
      expect(result.violation).toBeNull();
      expect(JSON.parse(out(result))).toEqual({ cwd: sandboxed.root, env: { BUN_BE_BUN: "1" }, home: false });
    } finally {
      rmSync(secret, { force: true });
    }
  });
});

describe.skipIf(missing.length > 0)("the contract holds inside", () => {
  const cases: [string, number | null, string | null][] = [
    ["exit 42", 42, null],
    ["kill -TERM $$", null, "SIGTERM"],
    ["exit 143", 143, null],
    ["kill -KILL $$", null, "SIGKILL"],
    ["exit 137", 137, null],
  ];
  for (const mode of ["pipes", "pty"] as const) {
    for (const [script, code, signal] of cases) {
      test(`${mode}: \`${script}\` ends as {code: ${code}, signal: ${signal}}, mirrored by the wrapper (bwrap alone would say 128+n)`, async () => {
        const stdio = mode === "pty" ? { kind: "pty", rows: 24, cols: 80 } : { kind: "pipes" };
        const handle = startExec(sandboxed.id, envelope(["/bin/sh", "-c", script], { options: sandboxed.options, env: { PATH }, stdio }), { keepControls: mode === "pty" });
        void handle.waitEvent("exit").then(() => {
          handle.closeStdin();
          handle.closeControls();
        });
        if (mode === "pipes") handle.closeStdin();
        const result = await handle.done;
        expect(result.violation).toBeNull();
        expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code, signal });
        expect({ code: result.code, signal: result.signal }).toEqual({ code, signal });
      });
    }
  }

  test("a workload that kills the sandbox init gets no say in its reported end: an error event, exit 1, nothing left", async () => {
    const tag = `phr-${crypto.randomUUID()}`;
    // Once started, SIGUSR1 makes the workload SIGKILL its parent, the sandbox init.
    const script = `trap 'kill -KILL $PPID' USR1; while :; do sleep 0.05; done # ${tag}`;
    const handle = startExec(sandboxed.id, envelope(["/bin/sh", "-c", script], { options: sandboxed.options, env: { PATH } }));
    handle.closeStdin();
    await handle.waitEvent("started");
    const workload = listProcesses().find((p) => p.state !== "Z" && cmdlineOf(p.pid).startsWith("/bin/sh\0-c\0trap"))!;
    process.kill(workload.pid, "SIGUSR1");
    const result = await handle.done;
    expect(result.violation).toBeNull();
    expect(result.events.map((e) => e.type)).toEqual(["started", "error", "eof", "exit"]);
    expect((result.events[1] as { message: string }).message).toContain("the sandbox ended without reporting how the workload ended");
    expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: 1, signal: null });
    expect(result.code).toBe(1);
    expect(listProcesses().filter((p) => p.state !== "Z" && cmdlineOf(p.pid).includes(tag))).toEqual([]);
  });

  test("neither the daemon's fd 3 and 4, nor the root descriptor, nor the init's script file reach any process of the sandbox", async () => {
    const handle = startExec(sandboxed.id, envelope(["sleep", "30"], { options: sandboxed.options, env: { PATH } }));
    handle.closeStdin();
    await handle.waitEvent("started");
    const protocol = [3, 4].map((fd) => readlinkSync(`/proc/${handle.pid}/fd/${fd}`));
    const sandbox = descendants(handle.pid);
    // bwrap's monitor, bwrap's init, the sandbox init and the workload.
    expect(sandbox.length).toBe(4);
    for (const pid of sandbox) {
      const targets = readdirSync(`/proc/${pid}/fd`).map((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`));
      expect(targets.filter((target) => protocol.includes(target) || target === sandboxed.root || target.includes("paseo-sandbox-init"))).toEqual([]);
    }
    const workload = sandbox.at(-1)!;
    expect(readdirSync(`/proc/${workload}/fd`).sort()).toEqual(["0", "1", "2"]);
    process.kill(handle.pid, "SIGTERM");
    const result = await handle.done;
    expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: null, signal: "SIGTERM" });
    const alive = new Set(listProcesses().filter((p) => p.state !== "Z").map((p) => p.pid));
    expect(sandbox.filter((pid) => alive.has(pid))).toEqual([]);
  });
});

describe.skipIf(missing.length > 0 || withoutCgroups("exec/sandbox.test.ts, the sandbox under cgroup containment"))("the sandbox under cgroup containment", () => {
  test("the execution's cgroup holds the workload, not the sandbox's own processes; `signal SIGTERM` through it ends the workload as SIGTERM, exactly", async () => {
    const execId = newExecId();
    const handle = startExec(sandboxed.id, envelope(["sleep", "30"], { options: sandboxed.options, env: { PATH }, execId }));
    handle.closeStdin();
    await handle.waitEvent("started");
    const cgroupOf = (pid: number) => readFileSync(`/proc/${pid}/cgroup`, "utf8").trim();
    const [bwrap, init, sandboxInit, workload] = descendants(handle.pid);
    expect(cgroupOf(workload!)).not.toBe(cgroupOf(handle.pid));
    expect([bwrap, init, sandboxInit].map((pid) => cgroupOf(pid!))).toEqual([0, 1, 2].map(() => cgroupOf(handle.pid)));
    const op = await runBinary(["signal", "--workspace-id", sandboxed.id, "--exec-id", execId, "--signal", "SIGTERM"], { stdin: request(sandboxed.options) });
    expect(op.stderr).toBe("");
    expect(op.code).toBe(0);
    const result = await handle.done;
    expect(result.events.map((e) => e.type)).toEqual(["started", "eof", "exit"]);
    expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: null, signal: "SIGTERM" });
  });
});

describe.skipIf(missing.length > 0)("the sandbox under process-group containment", () => {
  test("exit 143 and SIGTERM (forwarded, and through `signal`) are told apart; a background job does not outlive it", async () => {
    const ws = await readyWorkspace("sandbox-pg", "seed", { isolation: "sandbox", containment: "process-group" });
    try {
      expect((await sh(ws, "exit 143")).events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: 143, signal: null });
      const tag = `${50 + Math.floor(Math.random() * 1000) / 1000}`;
      const forwarded = startExec(ws.id, envelope(["/bin/sh", "-c", `sleep ${tag} & wait`], { options: ws.options, env: { PATH } }));
      forwarded.closeStdin();
      await forwarded.waitEvent("started");
      process.kill(forwarded.pid, "SIGTERM");
      const result = await forwarded.done;
      expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: null, signal: "SIGTERM" });
      expect(listProcesses().filter((p) => p.state !== "Z" && cmdlineOf(p.pid).includes(`sleep\0${tag}`))).toEqual([]);
      const execId = newExecId();
      const signalled = startExec(ws.id, envelope(["sleep", "30"], { options: ws.options, env: { PATH }, execId }));
      signalled.closeStdin();
      await signalled.waitEvent("started");
      const op = await runBinary(["signal", "--workspace-id", ws.id, "--exec-id", execId, "--signal", "SIGTERM"], { stdin: request(ws.options) });
      expect(op.code).toBe(0);
      expect((await signalled.done).events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: null, signal: "SIGTERM" });
    } finally {
      ws.cleanup();
    }
  });
});

describe.skipIf(missing.length > 0)("without a working bwrap nothing runs", () => {
  /** A PATH with git but without bwrap: the runtime finds bwrap on its own PATH. */
  let noBwrap: string;
  beforeAll(() => {
    noBwrap = join(outside.path, "no-bwrap-bin");
    mkdirSync(noBwrap, { recursive: true });
    symlinkSync(Bun.which("git")!, join(noBwrap, "git"));
  });

  const expectRefusal = (stderr: string) => {
    expect(stderr).toContain("bubblewrap");
    expect(stderr).toContain("kernel.unprivileged_userns_clone");
    expect(stderr).toContain("kernel.apparmor_restrict_unprivileged_userns");
  };

  test("create is refused, and no workspace exists afterwards", async () => {
    const dir = join(outside.path, "refused-project");
    mkdirSync(dir);
    const options = { stateDirectory: join(outside.path, "refused-home"), isolation: "sandbox" };
    const input = createInput("refused", { kind: "host-directory", path: dir });
    const result = await runBinary(["create", "--workspace-id", "refused"], { stdin: request(options, { input }), env: { PATH: noBwrap } });
    expect(result.code).toBe(1);
    expectRefusal(result.stderr);
    const inspect = await op("inspect", "refused", { options });
    expect(inspect.json).toEqual({ type: "inspection", protocolVersion: 1, inspection: { status: "missing" } });
  });

  test("exec is refused before anything is launched: no event, nothing written", async () => {
    const marker = join(plain.root, `launched-${crypto.randomUUID()}`);
    const env = { ...(process.env as Record<string, string>), PATH: noBwrap };
    const result = await run(plain, ["/usr/bin/touch", marker], { options: { ...plain.options, isolation: "sandbox" } }, { env });
    expect(result.code).toBe(1);
    expect(result.events).toEqual([]);
    expectRefusal(result.stderr);
    expect(existsSync(marker)).toBe(false);
  });

  test("a bwrap that cannot create its namespaces: create is refused, exec launches nothing in either mode", async () => {
    const refusing = join(outside.path, "refusing-bwrap-bin");
    mkdirSync(refusing, { recursive: true });
    symlinkSync(Bun.which("git")!, join(refusing, "git"));
    // What bwrap says, and how it exits, when the kernel refuses unprivileged user namespaces.
    writeFileSync(join(refusing, "bwrap"), "#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n", { mode: 0o755 });
    const dir = join(outside.path, "refused-ns-project");
    mkdirSync(dir);
    const options = { stateDirectory: join(outside.path, "refused-ns-home"), isolation: "sandbox" };
    const created = await runBinary(["create", "--workspace-id", "ns"], { stdin: request(options, { input: createInput("ns", { kind: "host-directory", path: dir }) }), env: { PATH: refusing } });
    expect(created.code).toBe(1);
    expect(created.stderr).toContain("No permissions to create new namespace");
    expectRefusal(created.stderr);
    const env = { ...(process.env as Record<string, string>), PATH: refusing };
    for (const stdio of [{ kind: "pipes" }, { kind: "pty", rows: 24, cols: 80 }]) {
      const marker = join(plain.root, `launched-${crypto.randomUUID()}`);
      const result = await run(plain, ["/usr/bin/touch", marker], { options: { ...plain.options, isolation: "sandbox" }, stdio }, { env });
      expect(result.code).toBe(1);
      expect(result.events).toEqual([]);
      expect(result.stderr).toContain("the sandbox did not start");
      expect(result.stderr).toContain("kernel.unprivileged_userns_clone");
      expect(existsSync(marker)).toBe(false);
    }
  });

  test("resume is refused, and the workspace stays paused", async () => {
    const options = { ...plain.options, isolation: "sandbox" };
    ok(await op("pause", plain.id, { options }));
    try {
      const result = await runBinary(["resume", "--workspace-id", plain.id], { stdin: request(options), env: { PATH: noBwrap } });
      expect(result.code).toBe(1);
      expectRefusal(result.stderr);
      expect((await op("inspect", plain.id, { options })).json.inspection.status).toBe("paused");
    } finally {
      ok(await op("resume", plain.id, { options: plain.options }));
    }
  });
});
