/**
 * A sandboxed workload under a network allowlist (issue 32), against the compiled binary: its
 * only way out is the runtime's policy proxy. Servers are the test's own, on loopback; names
 * are mapped by the test's own /etc/hosts, bound over the real one in a mount namespace the
 * wrapper runs in (the proxy resolves there). Names mapped to link-local, private and multicast
 * addresses are refused by the proxy's address check before any connection is attempted: no
 * packet ever leaves loopback.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import type { ExecutionDetails } from "../../src/operator/views.ts";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { BIN, runBinary } from "../../kit/binary.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { lab, tempDir, type Lab } from "../../kit/scratch.ts";
import { isLinux } from "../../src/platform/os.ts";
import { storageDir } from "../../src/workspace/paths.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { git, makeRepo } from "../support/git.ts";
import { create, createInput, destroyed, ok, op } from "../support/operation.ts";
import { until } from "../support/poll.ts";
import { skipBecause } from "../support/platform.ts";
import { executionRow } from "../support/store.ts";
import { sandboxGitKit } from "../support/sandbox-git.ts";
import { missingTools } from "../support/tools.ts";

const missing = missingTools("sandbox-network.test.ts", ["bwrap", "curl", "git", "unshare"]);

/** Why the wrapper cannot run in a mount namespace of the test's with its own /etc/hosts (decided when the file loads), or null. */
const NO_NAMESPACE: string | null = (() => {
  if (!isLinux) return "mount namespaces are Linux";
  const probe = Bun.spawnSync(["unshare", "--mount", "sh", "-c", "mount --bind /dev/null /etc/hostname"], { stderr: "pipe" });
  return probe.exitCode === 0 ? null : `cannot bind over /etc in a mount namespace (${probe.stderr.toString().trim()})`;
})();
const skip = missing.length > 0 || skipBecause("exec/sandbox-network.test.ts, the allowlist end to end", NO_NAMESPACE);

const scratch = tempDir("phr-net-");
let server: ReturnType<typeof Bun.serve>;
let raw: Server;
let rawPort = 0;
/** The runtime run in a mount namespace whose /etc/hosts is the test's. */
let runtime: string;

beforeAll(async () => {
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => new Response(`hello ${new URL(request.url).pathname}\n`) });
  raw = createServer((socket) => socket.end("raw hello\n"));
  await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
  rawPort = (raw.address() as { port: number }).port;
  const hosts = join(scratch.path, "hosts");
  writeFileSync(hosts, ["127.0.0.1 localhost", "127.0.0.1 allowed.test", "127.0.0.1 sneaky.test", "127.0.0.1 git.test", "169.254.169.254 metadata.test", "10.20.30.40 lan.test", "224.0.0.251 multicast.test", "192.168.1.1 router.test", ""].join("\n"));
  runtime = join(scratch.path, "runtime");
  writeFileSync(runtime, `#!/bin/sh\nexec unshare --mount sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' ${hosts} ${BIN} "$@"\n`);
  chmodSync(runtime, 0o755);
});
afterAll(() => {
  server?.stop(true);
  raw?.close();
  scratch.cleanup();
});

let t: Lab;
const { sandboxed, logged } = sandboxGitKit(() => t);
beforeEach(() => {
  t = lab("phr-sbx-net-");
  mkdirSync(join(t.dir, "project"));
});
afterEach(async () => {
  try {
    await destroyed("w", sandboxed());
  } finally {
    t.cleanup();
  }
});

const port = () => server.port!;
/** The allowlist the tests' workspaces run under: the test servers by name and by address (loopback needs an address entry). */
const allow = () => ["allowed.test", `allowed.test:${port()}`, `allowed.test:${rawPort}`, `127.0.0.1:${port()}`, `127.0.0.1:${rawPort}`, "sneaky.test:9", "metadata.test", "lan.test", "multicast.test", "router.test"];
const policy = () => sandboxed({ network: { allow: allow() } });

async function run(script: string, options = policy()): Promise<ExecResult> {
  const handle = startExec("w", envelope(["/bin/sh", "-c", script], { options, env: { PATH } }), { bin: runtime });
  handle.closeStdin();
  return handle.done;
}

async function workspace(options = policy()): Promise<void> {
  ok(await create(options, createInput("w", { kind: "host-directory", path: join(t.dir, "project") })));
}

describe.skipIf(skip)("a sandboxed workload under an allowlist reaches only what it allows", () => {
  test("allowed: HTTP by name and by address, through the proxy variables; CONNECT and SOCKS5 too; the proxy variables are set", async () => {
    await workspace();
    const script = [
      `curl -sS http://allowed.test:${port()}/by-name`,
      // 127.0.0.1 is in NO_PROXY (the sandbox's own loopback): the host's, by address, through the proxy explicitly.
      `curl -sS --noproxy '' http://127.0.0.1:${port()}/by-ip`,
      `curl -sS -p http://allowed.test:${port()}/tunnel`,
      `curl -sS -x "$ALL_PROXY" http://allowed.test:${port()}/socks`,
      `printf '%s\\n' "$HTTPS_PROXY" "$NO_PROXY"`,
    ].join(" && ");
    const result = await run(script);
    expect(result.stderr.toString()).toBe("");
    expect(result.stdout.toString()).toBe(`hello /by-name\nhello /by-ip\nhello /tunnel\nhello /socks\nhttp://127.0.0.1:3128\nlocalhost,127.0.0.1,::1\n`);
    expect(result.code).toBe(0);
  });

  test("refused, each with its log line: a host not listed, a port not listed, an allowed name resolving to loopback, link-local, private and multicast addresses", async () => {
    await workspace();
    const attempts = ["http://elsewhere.test/", `http://allowed.test:${port() + 1}/`, "http://sneaky.test:9/", "http://metadata.test/latest/meta-data/", "http://lan.test/", "http://multicast.test/", "http://router.test/"];
    const result = await run(attempts.map((url) => `curl -s -o /dev/null -w '%{http_code}\\n' ${url}`).join("; "));
    expect(result.stdout.toString()).toBe("403\n".repeat(attempts.length));
    const denied = logged("net-denied");
    expect(denied.map((line) => [line.host, line.port])).toEqual([
      ["elsewhere.test", 80],
      ["allowed.test", port() + 1],
      ["sneaky.test", 9],
      ["metadata.test", 80],
      ["lan.test", 80],
      ["multicast.test", 80],
      ["router.test", 80],
    ]);
    expect(denied[2]!).toMatchObject({ address: "127.0.0.1", workspaceId: "w" });
    expect(denied[3]!).toMatchObject({ address: "169.254.169.254" });
    expect(denied.every((line) => typeof line.reason === "string" && typeof line.execId === "string")).toBe(true);
  });

  test("a program that ignores the proxy finds no way out: a direct connection and a DNS query fail, the proxy's port is the only one", async () => {
    await workspace();
    const script = [
      `curl -s --noproxy '*' -o /dev/null -m 5 http://127.0.0.1:${port()}/ && echo direct-reached || echo direct-refused`,
      // A name no hosts file maps: a real DNS query, which finds no route out of the sandbox's namespace.
      `(getent hosts example.org >/dev/null && echo dns-answered) || echo dns-failed`,
    ].join("; ");
    const result = await run(script);
    expect(result.stdout.toString()).toBe("direct-refused\ndns-failed\n");
  });

  test("git clone over HTTP through the proxy works unchanged", async () => {
    const origin = makeRepo(join(t.dir, "origin"));
    const bare = join(t.dir, "served.git");
    git(t.dir, "clone", "-q", "--bare", origin, bare);
    git(bare, "update-server-info");
    const files = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => new Response(Bun.file(join(bare, new URL(request.url).pathname.replace(/^\/served\.git/, "")))) });
    try {
      // By a name: 127.0.0.1 itself is the sandbox's own loopback (NO_PROXY); the address entry lets the name's loopback answer through.
      const options = sandboxed({ network: { allow: [`git.test:${files.port}`, `127.0.0.1:${files.port}`] } });
      await workspace(options);
      const result = await run(`git clone -q http://git.test:${files.port}/served.git copy && git -C copy log --format=%s -1`, options);
      expect(result.stdout.toString()).toBe("first\n");
    } finally {
      files.stop(true);
    }
  });

  test("the policy is pinned: an exec asking for a wider one (another entry, or the host's network) is refused before launch, naming the recorded one; a narrower one runs", async () => {
    await workspace();
    const wider = await run("echo ran", sandboxed({ network: { allow: [...allow(), "example.org"] } }));
    expect(wider.stdout.toString()).toBe("");
    expect(wider.stderr.toString()).toContain("allow");
    expect(wider.code).not.toBe(0);
    const host = await run("echo ran", sandboxed({ network: "host" }));
    expect(host.stdout.toString()).toBe("");
    const narrower = await run("echo ran", sandboxed({ network: { allow: ["allowed.test"] } }));
    expect(narrower.stdout.toString()).toBe("ran\n");
    const none = await run("echo ran", sandboxed({ network: "none" }));
    expect(none.stdout.toString()).toBe("ran\n");
  });

  test("fail closed: a proxy that cannot start refuses the exec, nothing runs, the execution is recorded as finished", async () => {
    await workspace();
    // A short execId keeps the socket in the workspace's storage (a path too long for a socket goes to a temp dir).
    const spawn = { ...envelope(["/bin/sh", "-c", "echo ran > ran.txt"], { options: policy(), env: { PATH } }), execId: "fc1" };
    const socketPath = join(storageDir(t.home, "w"), `egress-${spawn.execId}.sock`);
    expect(socketPath.length).toBeLessThan(104);
    // The proxy's socket path is taken by a directory the runtime will not remove.
    mkdirSync(join(socketPath, "kept"), { recursive: true });
    const handle = startExec("w", spawn, { bin: runtime });
    handle.closeStdin();
    const result = await handle.done;
    expect(result.code).toBe(1);
    expect(result.stderr.toString()).toContain("the sandbox's network policy could not be set up");
    expect(existsSync(join(t.dir, "project", "ran.txt"))).toBe(false);
    expect(executionRow(t.home, "fc1")?.finished_at).not.toBeNull();
    expect(readdirSync(storageDir(t.home, "w")).filter((name) => name.startsWith("egress-") && name.endsWith(".json"))).toEqual([]);
  });

  test("the policy survives pause and resume", async () => {
    await workspace();
    ok(await op("pause", "w", { options: policy() }));
    ok(await op("resume", "w", { options: policy() }));
    const result = await run(`curl -s -o /dev/null -w '%{http_code}\\n' http://elsewhere.test/; curl -sS http://allowed.test:${port()}/again`);
    expect(result.stdout.toString()).toBe("403\nhello /again\n");
  });

  test("ps counts per execution: the refusals, and the bytes of each host reached, while it runs; the table gains a REFUSED column", async () => {
    await workspace();
    const stop = join(t.dir, "project", "stop");
    const script = `curl -sS http://allowed.test:${port()}/counted && curl -s -o /dev/null -w '%{http_code}\\n' http://elsewhere.test/ && echo checked && while [ ! -e stop ]; do sleep 0.05; done`;
    const handle = startExec("w", envelope(["/bin/sh", "-c", script], { options: policy(), env: { PATH } }), { bin: runtime });
    handle.closeStdin();
    try {
      await handle.waitStdout("checked\n");
      expect(handle.stdoutText()).toBe("hello /counted\n403\nchecked\n");
      // The counts file is rewritten at most every 250 ms: asked again until it says both.
      let shown: ExecutionDetails | undefined;
      await until(
        () => `ps to count one refusal and one host; last seen ${JSON.stringify(shown?.network)}`,
        async () => {
          const listed = await runBinary(["ps", "--json", "--home", t.home]);
          shown = (JSON.parse(listed.stdout) as { executions: ExecutionDetails[] }).executions[0];
          return shown?.network?.denied === 1 && shown.network.hosts.length === 1;
        },
      );
      expect(shown!.network).toEqual({ denied: 1, failed: 0, hosts: [{ host: `allowed.test:${port()}`, connections: 1, bytesIn: expect.any(Number), bytesOut: expect.any(Number) }] });
      expect(shown!.network!.hosts[0]!.bytesIn).toBeGreaterThan("hello /counted\n".length);
      expect(shown!.network!.hosts[0]!.bytesOut).toBeGreaterThan(0);
      const table = await runBinary(["ps", "--home", t.home]);
      const [header, row] = table.stdout.split("\n");
      expect(header).toMatch(/^WORKSPACE +EXEC ID +PID +MODE +PURPOSE +AGE +MEMORY +REFUSED +COMMAND$/);
      expect(row!.slice(header!.indexOf("REFUSED")).startsWith("1 ")).toBe(true);
    } finally {
      writeFileSync(stop, "");
      await handle.done;
    }
  });

  test("SOCKS5 to another TCP service (a raw server on an allowed port), as git over ssh with a ProxyCommand would", async () => {
    await workspace();
    const result = await run(`curl -sS --socks5-hostname 127.0.0.1:3128 telnet://allowed.test:${rawPort} </dev/null`);
    expect(result.stdout.toString()).toBe("raw hello\n");
  });
});

describe.skipIf(missing.length > 0)("an allowlist that is not one is refused before anything is made", () => {
  test("create with a bad entry: exit 1, the entry's position and what a good one looks like, no workspace", async () => {
    const created = await create(sandboxed({ network: { allow: ["ok.test", "http://bad.test/path"] } }), createInput("w", { kind: "host-directory", path: join(t.dir, "project") }));
    expect(created.code).not.toBe(0);
    expect(created.stderr).toContain("entry 2");
    expect(created.stderr).toContain("for example");
  });
});
