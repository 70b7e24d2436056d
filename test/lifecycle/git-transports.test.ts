/**
 * Git sources against a hostile input and a stalled server: only allowed transports, refused
 * before anything is written and again by git itself; no prompts; every git command bounded by
 * options.gitTimeoutMs; and a create killed mid-clone leaves no git process behind.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bootId, isSameProcess, readProcess } from "../../src/platform/process.ts";
import { gitPath } from "../../src/workspace/git-environment.ts";
import { gitTransport } from "../../src/workspace/git-url.ts";
import { stalledServer } from "../support/git-servers.ts";
import { BIN } from "../../kit/binary.ts";
import { createInput, ok, op, type OpResult } from "../support/operation.ts";
import { ownedEntries, recordedChild, records } from "../support/store.ts";
import { repoLab, git } from "../support/git.ts";
import type { Lab } from "../../kit/scratch.ts";
import { cmdlineOf, environOf, processesWith } from "../support/procs.ts";
import { untilNone } from "../support/poll.ts";
import { linuxOnly, withoutGroupPidfd } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc). */
const PROC = linuxOnly("lifecycle/git-transports.test.ts, git's argv and environment read from /proc", "/proc");

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab("phr-gitx-")));
afterEach(() => t.cleanup());

/**
 * `create` as the daemon runs it, SIGKILLed if it is still running after `guardMs`: a create
 * that hangs fails the test instead of hanging it (this is a hang guard, not a timing claim).
 */
async function createGuarded(options: Record<string, unknown>, input: { workspaceId: string }, env: Record<string, string> = {}, guardMs = 30_000): Promise<OpResult & { hung: boolean }> {
  const proc = Bun.spawn([BIN, "create", "--workspace-id", input.workspaceId], {
    stdin: new Blob([`${JSON.stringify({ protocolVersion: 1, input, options })}\n`]),
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ...env } as Record<string, string>,
  });
  let hung = false;
  const guard = setTimeout(() => {
    hung = true;
    proc.kill("SIGKILL");
  }, guardMs);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  clearTimeout(guard);
  return { code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode), stdout, stderr, json: stdout === "" ? null : JSON.parse(stdout), hung };
}

function gitSource(url: string) {
  return { kind: "git", url, revision: "" };
}

describe("transports", () => {
  test("every URL form maps to the transport git itself names for it", () => {
    // With nothing allowed, git refuses each URL naming the transport it would use.
    const urls = ["fd::17", "ext::sh -c x", "::x", "1a::x", "a.b+c-d::x", "x::", "foo://h/r", "HTTPS://h/r", "https://h/r", "https://u:p@h/r", "http://h/r", "ftp://h/r", "git://h/r", "ssh://h/r", "git+ssh://h/r", "ssh+git://h/r", "ssh://u@h:22/r", "git@h:r", "h:r", "[h:22]:r", "x:/y", "http:/x", "://x", "a_b://x", "/srv/r.git", "./a:b", "a/b:c", "file:///srv/r.git"];
    for (const url of urls) {
      const result = Bun.spawnSync({ cmd: ["git", "ls-remote", "--", url], cwd: t.dir, env: { ...process.env, GIT_ALLOW_PROTOCOL: "" }, stdin: "ignore", stdout: "ignore", stderr: "pipe", timeout: 10_000 });
      const named = /transport '([^']*)' not allowed/.exec(result.stderr.toString())?.[1];
      const ours = gitTransport(url).protocol;
      // git skips its check for an empty helper name and fails to run `git remote-` instead.
      // A "scheme" git's connect code does not know ends there: "protocol '…' is not supported".
      const unsupported = /protocol '([^']*)' is not supported/.exec(result.stderr.toString())?.[1];
      if (gitTransport(url).form === "helper" && ours === "") expect(result.stderr.toString(), url).toContain("'remote-' is not a git command");
      else expect(`${url} → ${ours}`).toBe(`${url} → ${named ?? unsupported}`);
    }
  });

  test.skipIf(PROC)("fd::, ext:: and unknown transports are refused at validation, before anything is written", async () => {
    const marker = join(t.dir, "ext-ran");
    const refused: [string, string][] = [
      ["fd::17", '"fd" (remote-helper syntax "fd::…")'],
      ["fd::0", '"fd" (remote-helper syntax "fd::…")'],
      [`ext::sh -c touch% ${marker}`, '"ext" (remote-helper syntax "ext::…")'],
      ["foo://example.invalid/repo.git", '"foo" (URL scheme "foo://")'],
      ["http://127.0.0.1:1/repo.git", '"http" (URL scheme "http://")'],
      ["HTTPS://example.invalid/repo.git", '"HTTPS" (URL scheme "HTTPS://")'],
    ];
    for (const [url, transport] of refused) {
      const result = await createGuarded(t.options, createInput("w1", gitSource(url)));
      expect(result.hung, url).toBe(false);
      expect(result.code, url).toBe(1);
      expect(result.stdout, url).toBe("");
      expect(result.stderr, url).toContain(`input.project.source.url ${JSON.stringify(url)} uses the git transport ${transport}, which options.allowedGitProtocols does not allow (allowed: https, ssh, git, file)`);
    }
    expect(existsSync(marker)).toBe(false);
    // Refused before the store was opened: no home, no record, no git.
    expect(existsSync(t.home)).toBe(false);
    expect(processesWith(t.dir)).toEqual([]);
  });

  test("the operator's list decides: with only https allowed, file:// URLs, local paths and scp-like ssh are refused", async () => {
    const remote = `file://${repo}`;
    const narrow = await createGuarded({ ...t.options, allowedGitProtocols: ["https"] }, createInput("w1", gitSource(remote)));
    expect(narrow.code).toBe(1);
    expect(narrow.stderr).toContain('uses the git transport "file" (URL scheme "file://"), which options.allowedGitProtocols does not allow (allowed: https)');
    const path = await createGuarded({ ...t.options, allowedGitProtocols: ["https"] }, createInput("w1", gitSource(repo)));
    expect(path.stderr).toContain('uses the git transport "file" (a local path, which is file)');
    const scp = await createGuarded({ ...t.options, allowedGitProtocols: ["https"] }, createInput("w1", gitSource("git@example.invalid:org/repo.git")));
    expect(scp.stderr).toContain('uses the git transport "ssh" (scp-like "host:path", which is ssh)');
    expect(records(t.home)).toEqual([]);
    ok(await createGuarded(t.options, createInput("w1", gitSource(remote))));
  });

  test("malformed git URLs are refused with the reason: relative path, option-like host, remote URL on a refused transport", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [createInput("w1", gitSource("relative/repo")), "is a relative local path"],
      [createInput("w1", gitSource("-oProxyCommand=touch:x")), 'names a host starting with "-"'],
      [createInput("w1", gitSource("ssh://-oProxyCommand=x/repo")), 'names a host starting with "-"'],
      [createInput("w1", gitSource(":repo")), "names no host"],
      [createInput("w1", gitSource("https:///repo")), "names no host"],
      [
        createInput("w1", { kind: "host-directory", path: repo }, { kind: "resolved-worktree", worktreeSlug: "pr", source: { kind: "checkout-github-pr", headRef: "feature", baseRefName: "main", checkoutRefs: [{ remoteName: "fd::3", remoteRef: "refs/heads/feature" }] } }),
        'input.placement.source.checkoutRefs[].remoteName "fd::3" uses the git transport "fd"',
      ],
    ];
    for (const [input, message] of cases) {
      const result = await createGuarded(t.options, input as { workspaceId: string });
      expect(result.code, message).toBe(1);
      expect(result.stderr, message).toContain(message);
    }
    expect(existsSync(t.home)).toBe(false);
  });

  test("git itself refuses a transport the operator does not allow: a configured remote of the host repository", async () => {
    // Validation cannot see what a remote name stands for; git's own protocol policy must hold.
    const server = stalledServer();
    try {
      git(repo, "remote", "add", "stalled", `http://127.0.0.1:${server.port}/repo.git`);
      const input = createInput("w1", { kind: "host-directory", path: repo }, { kind: "resolved-worktree", worktreeSlug: "pr", source: { kind: "checkout-github-pr", headRef: "feature", baseRefName: "main", checkoutRefs: [{ remoteName: "stalled", remoteRef: "refs/heads/feature" }] } });
      const result = await createGuarded(t.options, input);
      expect(result.hung).toBe(false);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("transport 'http' not allowed");
      expect(server.connections()).toBe(0);
      expect(records(t.home)).toEqual([]);
      expect(ownedEntries(t.home)).toEqual([]);
    } finally {
      server.stop();
    }
  });
});

describe("a stalled server", () => {
  // git's whole group, the gate's watchdog too, is ended through a pidfd of its leader.
  const NO_GROUP_PIDFD = withoutGroupPidfd("lifecycle/git-transports.test.ts, nothing left running after a stalled server");
  for (const scheme of ["git", "http"] as const) {
    test.skipIf(PROC || NO_GROUP_PIDFD)(`${scheme}:// that accepts and never answers hits gitTimeoutMs: the create fails, nothing is left running or recorded`, async () => {
      // Who was connected while the server stalled: git (and, for http, git-remote-http), its gate's watchdog.
      const connected: { pid: number; startTicks: number; cmdline: string }[] = [];
      const server = stalledServer(() => {
        for (const pid of [...processesWith(t.home), ...processesWith(`127.0.0.1:${server.port}`)]) {
          const info = readProcess(pid);
          if (info) connected.push({ pid, startTicks: info.startTicks, cmdline: cmdlineOf(pid).replaceAll("\0", " ") });
        }
      });
      try {
        const url = `${scheme}://127.0.0.1:${server.port}/stuck.git`;
        const options = { ...t.options, gitTimeoutMs: 3000, allowedGitProtocols: ["https", "http", "ssh", "git", "file"] };
        const result = await createGuarded(options, createInput("w1", gitSource(url)));
        expect(result.hung).toBe(false);
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(`git clone -- ${url}`);
        expect(result.stderr).toContain("did not finish within 3000 ms (options.gitTimeoutMs); it and every process it started were killed");
        const commands = connected.map((process) => process.cmdline);
        expect(commands.some((command) => command.startsWith(`${gitPath()} clone -- ${url}`))).toBe(true);
        if (scheme === "http") expect(commands.some((command) => command.includes("remote-http"))).toBe(true);
        // Gone before create answered: git, its remote helper, the gate's watchdog.
        expect(connected.filter((process) => isSameProcess({ ...process, bootId: bootId() }))).toEqual([]);
        expect(processesWith(t.home)).toEqual([]);
        expect(processesWith(`127.0.0.1:${server.port}`)).toEqual([]);
        expect(records(t.home)).toEqual([]);
        expect(ownedEntries(t.home)).toEqual([]);
      } finally {
        server.stop();
      }
    });
  }

  test.skipIf(PROC)("git runs without prompts and with the operator's bounds in its own environment", async () => {
    const server = stalledServer();
    try {
      const options = { ...t.options, gitTimeoutMs: 60_000, allowedGitProtocols: ["https", "git"] };
      const running = createGuarded(options, createInput("w1", gitSource(`git://127.0.0.1:${server.port}/stuck.git`)), { GIT_ASKPASS: "/bin/false", SSH_ASKPASS: "/bin/false", GIT_ALLOW_PROTOCOL: "ext:fd" });
      const child = await recordedChild(t.home, "w1");
      const env = environOf(child.pid);
      expect(env.GIT_TERMINAL_PROMPT).toBe("0");
      expect(env.GIT_ASKPASS).toBe("");
      expect(env.GIT_ALLOW_PROTOCOL).toBe("https:git");
      expect(env.GIT_PROTOCOL_FROM_USER).toBe("0");
      const config = Object.fromEntries(Array.from({ length: Number(env.GIT_CONFIG_COUNT) }, (_, i) => [env[`GIT_CONFIG_KEY_${i}`], env[`GIT_CONFIG_VALUE_${i}`]]));
      expect(config).toEqual({ "protocol.allow": "never", "protocol.https.allow": "always", "protocol.git.allow": "always", "http.lowSpeedLimit": "1", "http.lowSpeedTime": "60" });
      // ssh is not allowed here, so there is no ssh command to set.
      expect(env.GIT_SSH_COMMAND).toBeUndefined();
      await killCreate(running, child);
    } finally {
      server.stop();
    }
  });

  test.skipIf(PROC)("ssh runs in batch mode, unless the operator set their own ssh command", async () => {
    const server = stalledServer();
    try {
      const input = createInput("w1", gitSource(`git://127.0.0.1:${server.port}/stuck.git`));
      const batch = createGuarded(t.options, input);
      const first = await recordedChild(t.home, "w1");
      expect(environOf(first.pid).GIT_SSH_COMMAND).toBe("ssh -o BatchMode=yes -o ConnectTimeout=30 -o ServerAliveInterval=15 -o ServerAliveCountMax=4");
      await killCreate(batch, first);
      ok(await op("destroy", "w1", { options: t.options }));

      const own = createGuarded(t.options, input, { GIT_SSH_COMMAND: "ssh -F /etc/operator-ssh-config" });
      const second = await recordedChild(t.home, "w1");
      expect(environOf(second.pid).GIT_SSH_COMMAND).toBe("ssh -F /etc/operator-ssh-config");
      await killCreate(own, second);
      ok(await op("destroy", "w1", { options: t.options }));

      const gitconfig = join(t.dir, "gitconfig");
      writeFileSync(gitconfig, "[core]\n\tsshCommand = ssh -F /etc/operator-ssh-config\n");
      const configured = createGuarded(t.options, input, { GIT_CONFIG_GLOBAL: gitconfig });
      const third = await recordedChild(t.home, "w1");
      expect(environOf(third.pid).GIT_SSH_COMMAND).toBeUndefined();
      await killCreate(configured, third);
    } finally {
      server.stop();
    }
  });
});

test.skipIf(PROC)("a create SIGKILLed mid-clone leaves no git process behind: the gate's watchdog ends git's process group", async () => {
  const server = stalledServer();
  try {
    const running = createGuarded(t.options, createInput("w1", gitSource(`git://127.0.0.1:${server.port}/stuck.git`)));
    const child = await recordedChild(t.home, "w1");
    // Nobody runs another operation: git must go because its creator died, not because of a takeover.
    await killCreate(running, child);
    expect(isSameProcess({ ...child, bootId: bootId() })).toBe(false);
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection).toEqual({ status: "missing" });
  } finally {
    server.stop();
  }
});

/** SIGKILLs the create whose git child is `child` (git itself stays: the create's own process dies). */
async function killCreate(running: Promise<OpResult>, child: { pid: number }): Promise<void> {
  const creator = Number(readStat(child.pid).ppid);
  expect(cmdlineOf(creator).split("\0")).toContain("create");
  process.kill(creator, "SIGKILL");
  // git holds the create's stdout and stderr: `running` settles only once git is gone too.
  expect(await untilNone(() => processesWith(t.home))).toEqual([]);
  await running;
}

/** The parent pid of a live process, from /proc/<pid>/stat. */
function readStat(pid: number): { ppid: string } {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  return { ppid: text.slice(text.lastIndexOf(")") + 2).split(" ")[1]! };
}
