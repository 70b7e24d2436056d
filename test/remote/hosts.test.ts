/**
 * Two "hosts" (two sshd on two ports, each with its own runtime home) behind one `--remote`
 * runtime: placement is stable and recorded, every operation goes to the workspace's host,
 * reconcile tells each host only about its own workspaces, least-loaded follows live executions.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hashPlacement } from "../../src/remote/placement.ts";
import { parseSshUrl } from "../../src/ssh-url.ts";
import { BIN, runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { createInput, ok, remoteOp } from "../support/operation.ts";
import { makeRepo } from "../support/git.ts";
import { until } from "../support/poll.ts";
import { processesWith, MARK, killMarked } from "../support/procs.ts";
import { linuxOnly } from "../support/platform.ts";
import { withoutSsh } from "../support/tools.ts";

/** Set where the tests marked with it cannot run: they need Linux (the tests' own sshd on 127.0.0.1 and /proc). */
const NO_SSHD = linuxOnly("remote/hosts.test.ts", "the tests' own sshd on 127.0.0.1 and /proc") || withoutSsh("remote/hosts.test.ts");

setDefaultTimeout(60_000);

let a: SshLab;
let b: SshLab;
let scratch: { path: string; cleanup: () => void };
let repo: string;

/** A remote program that logs every lifecycle call it gets (argv and stdin), then runs the real one. */
function loggingBinary(dir: string, name: string): { path: string; log: string } {
  const path = join(dir, `${name}-runtime`);
  const log = join(dir, `${name}.log`);
  writeFileSync(
    path,
    ["#!/bin/sh", `case "$1" in exec-remote|receive-source) exec ${BIN} "$@";; esac`, `printf 'ARGV %s\\n' "$*" >> ${log}`, `tee -a ${log} | ${BIN} "$@"`, ""].join("\n"),
  );
  chmodSync(path, 0o755);
  writeFileSync(log, "");
  return { path, log };
}

let logA: string;
let logB: string;

// Without sshd every block below is skipped, and there is nothing to start or stop.
if (!NO_SSHD) {
  beforeAll(async () => {
    scratch = tempDir("phr-remote-hosts-");
    const binA = loggingBinary(scratch.path, "a");
    const binB = loggingBinary(scratch.path, "b");
    [logA, logB] = [binA.log, binB.log];
    a = await startSshd(binA.path);
    b = await startSshd(binB.path, a);
    repo = makeRepo(join(scratch.path, "repo"));
  });

  afterAll(async () => {
    killMarked();
    await b.stop();
    await a.stop();
    scratch.cleanup();
  });
}

/** Daemon options for the pair: `--remote` names host a, remote.hosts adds host b; each host keeps its own default home. */
const options = (extra: Record<string, unknown> = {}) => ({ stateDirectory: a.localHome, remote: { hosts: [b.url], ...extra } });
const hosts = () => [parseSshUrl(a.url), parseSshUrl(b.url)];

/** Workspace ids whose hash host is `lab`, found by trying names in order. */
function idsOn(lab: SshLab, count: number, prefix: string): string[] {
  const key = parseSshUrl(lab.url).key;
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) if (hashPlacement(hosts(), `${prefix}-${i}`).key === key) ids.push(`${prefix}-${i}`);
  return ids;
}

/** Workspace ids in a host's own runtime home. */
async function workspacesOn(lab: SshLab): Promise<string[]> {
  const result = await runBinary(["ls", "--json", "--home", lab.remoteHome]);
  if (result.code !== 0) return [];
  return (JSON.parse(result.stdout).workspaces as { workspaceId: string }[]).map((w) => w.workspaceId).sort();
}

const createBody = (id: string, extra: Record<string, unknown> = {}) => ({
  input: createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `agent-${id}`, baseRef: "main" }),
  options: options(extra),
});

describe.skipIf(NO_SSHD)("placement by hash", () => {
  test("is stable, lands each workspace on its hash host, and every later operation follows it", async () => {
    const onA = idsOn(a, 2, "pa");
    const onB = idsOn(b, 2, "pb");
    for (const id of [...onA, ...onB]) ok(await remoteOp(a, "create", id, createBody(id)));
    expect(await workspacesOn(a)).toEqual([...onA].sort());
    expect(await workspacesOn(b)).toEqual([...onB].sort());
    // The same create again goes to the same host (idempotent there), never to the other one.
    for (const id of [...onA, ...onB]) ok(await remoteOp(a, "create", id, createBody(id)));
    expect(await workspacesOn(a)).toEqual([...onA].sort());
    expect(await workspacesOn(b)).toEqual([...onB].sort());
    for (const id of [...onA, ...onB]) expect(ok(await remoteOp(a, "inspect", id, { options: options() })).inspection.status).toBe("ready");
    // destroy goes to the right host: b loses exactly its own, a keeps everything.
    for (const id of onB) ok(await remoteOp(a, "destroy", id, { options: options() }));
    expect(await workspacesOn(b)).toEqual([]);
    expect(await workspacesOn(a)).toEqual([...onA].sort());
    for (const id of onA) ok(await remoteOp(a, "destroy", id, { options: options() }));
    expect(await workspacesOn(a)).toEqual([]);
  });

  test("reconcile tells each host only its own workspace ids; hosts never learn about each other", async () => {
    const [keepA, dropA] = idsOn(a, 2, "ra") as [string, string];
    const [keepB, dropB] = idsOn(b, 2, "rb") as [string, string];
    for (const id of [keepA, dropA, keepB, dropB]) ok(await remoteOp(a, "create", id, createBody(id)));
    writeFileSync(logA, "");
    writeFileSync(logB, "");
    const result = await remoteOp(a, "reconcile", null, { options: options(), workspaceIds: [keepA, keepB, "never-created"] });
    expect(result.stdout).toBe('{"type":"ok","protocolVersion":1}\n');
    expect(await workspacesOn(a)).toEqual([keepA]);
    expect(await workspacesOn(b)).toEqual([keepB]);
    const [textA, textB] = [readFileSync(logA, "utf8"), readFileSync(logB, "utf8")];
    // A listed id never created here goes where the hash puts it, like any workspace without a record.
    const stray = hashPlacement(hosts(), "never-created").key === parseSshUrl(a.url).key ? "a" : "b";
    const listedOn = (host: "a" | "b", keep: string) => JSON.stringify(stray === host ? [keep, "never-created"] : [keep]);
    expect(textA).toContain(`"workspaceIds":${listedOn("a", keepA)}`);
    expect(textB).toContain(`"workspaceIds":${listedOn("b", keepB)}`);
    for (const [text, other] of [[textA, b], [textB, a]] as const) {
      expect(text).not.toContain(String(other.port));
      expect(text).not.toContain(other.remoteHome);
      expect(text).not.toContain('"remote"');
    }
    expect(textB).not.toContain(keepA);
    expect(textA).not.toContain(keepB);
    for (const id of [keepA, keepB]) ok(await remoteOp(a, "destroy", id, { options: options() }));
  });
});

describe.skipIf(NO_SSHD)("placement by live executions", () => {
  test('"least-loaded" puts a new workspace beside fewer executions, and it stays there', async () => {
    const [busy] = idsOn(a, 1, "busy") as [string];
    ok(await remoteOp(a, "create", busy, createBody(busy)));
    const sleep = `${400 + (process.pid % 1000) / 1000}`;
    const handle = startExec(busy, envelope(["sleep", sleep], { options: options(), env: { PATH, ...MARK } }), { prefix: a.prefix });
    await handle.waitEvent("started");
    const [wanted] = idsOn(a, 1, "ll") as [string];
    ok(await remoteOp(a, "create", wanted, createBody(wanted, { placement: "least-loaded" })));
    // Its hash host is a, but a runs an execution and b none.
    expect(await workspacesOn(b)).toEqual([wanted]);
    expect(ok(await remoteOp(a, "inspect", wanted, { options: options() })).inspection.status).toBe("ready");
    process.kill(handle.pid, "SIGTERM");
    await handle.done;
    await until("the sleep is gone", () => processesWith(`sleep\u0000${sleep}`).length === 0);
    // Recorded: with the load gone, the workspace is still found on b (not re-placed by hash).
    expect(ok(await remoteOp(a, "inspect", wanted, { options: options({ placement: "least-loaded" }) })).inspection.status).toBe("ready");
    ok(await remoteOp(a, "destroy", wanted, { options: options() }));
    ok(await remoteOp(a, "destroy", busy, { options: options() }));
    expect(await workspacesOn(b)).toEqual([]);
  });
});
