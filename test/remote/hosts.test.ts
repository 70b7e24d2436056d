/**
 * Two "hosts" (two sshd on two ports, each with its own runtime home) behind one `--remote`
 * runtime: placement is stable and recorded, every operation goes to the workspace's host,
 * reconcile tells each host only about its own workspaces, least-loaded follows live executions.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hashPlacement } from "../../src/remote/placement.ts";
import { parseSshUrl } from "../../src/ssh-url.ts";
import { BIN, runBinary } from "../../kit/binary.ts";
import { freePort } from "../../kit/ports.ts";
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
import { storePath } from "../support/store.ts";

/** Set where the tests marked with it cannot run: they need Linux (the tests' own sshd on 127.0.0.1 and /proc). */
const NO_SSHD = linuxOnly("remote/hosts.test.ts", "the tests' own sshd on 127.0.0.1 and /proc") || withoutSsh("remote/hosts.test.ts");

setDefaultTimeout(60_000);

let a: SshLab;
let b: SshLab;
/** A host added to the fleet later: nothing was ever created there, so its runtime home does not exist. */
let fresh: SshLab;
let scratch: { path: string; cleanup: () => void };
let repo: string;

/**
 * A remote program that logs every lifecycle call it gets (argv and stdin), then runs the real
 * one; a create waits (30 s at most) while the file `<log>.hold` exists.
 */
function loggingBinary(dir: string, name: string): { path: string; log: string } {
  const path = join(dir, `${name}-runtime`);
  const log = join(dir, `${name}.log`);
  const hold = `[ "$1" = create ] && for i in $(seq 600); do [ -e ${log}.hold ] || break; sleep 0.05; done`;
  writeFileSync(
    path,
    ["#!/bin/sh", `case "$1" in exec-remote|receive-source) exec ${BIN} "$@";; esac`, `printf 'ARGV %s\\n' "$*" >> ${log}`, hold, `tee -a ${log} | ${BIN} "$@"`, ""].join("\n"),
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
    fresh = await startSshd(BIN, a);
    repo = makeRepo(join(scratch.path, "repo"));
  });

  afterAll(async () => {
    killMarked();
    await fresh.stop();
    await b.stop();
    await a.stop();
    scratch.cleanup();
  });
}

/** Daemon options for the pair: `--remote` names host a, remote.hosts adds host b; each host keeps its own default home. */
const options = (extra: Record<string, unknown> = {}) => ({ stateDirectory: a.localHome, remote: { hosts: [b.url], ...extra } });
const hosts = () => [parseSshUrl(a.url), parseSshUrl(b.url)];

/** Workspace ids whose hash host (over `among`, default a and b) is `lab`, found by trying names in order. */
function idsOn(lab: SshLab, count: number, prefix: string, among = hosts()): string[] {
  const key = parseSshUrl(lab.url).key;
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) if (hashPlacement(among, `${prefix}-${i}`).key === key) ids.push(`${prefix}-${i}`);
  return ids;
}

/** The workspace ids with a placement record in the local home, read there directly (`remote_placements`). */
function placed(): string[] {
  const db = new Database(storePath(a.localHome), { readonly: true });
  try {
    return (db.query("SELECT workspace_id FROM remote_placements ORDER BY workspace_id").all() as { workspace_id: string }[]).map((row) => row.workspace_id);
  } finally {
    db.close();
  }
}

/** A URL of a host that does not answer: a port nothing listens on (taken, then let go). */
async function deadUrl(): Promise<string> {
  return `ssh://root@127.0.0.1:${await freePort()}/opt/paseo-host-runtime`;
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
    // A listed id without a record goes to every host (a create may be placing it right now anywhere).
    expect(textA).toContain(`"workspaceIds":${JSON.stringify([keepA, "never-created"])}`);
    expect(textB).toContain(`"workspaceIds":${JSON.stringify([keepB, "never-created"])}`);
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

describe.skipIf(NO_SSHD)("placement records", () => {
  test("reconcile keeps the record of every workspace it leaves, and forgets one only once its host says it is gone", async () => {
    // Made while the fleet was host a alone: each lives on a, though the hash over a and b says b.
    const [adopted, orphan, other] = idsOn(b, 3, "kept") as [string, string, string];
    const solo = (stopTimeoutMs: number) => ({ stateDirectory: a.localHome, stopTimeoutMs, remote: {} });
    for (const id of [adopted, orphan]) ok(await remoteOp(a, "create", id, { input: createBody(id).input, options: solo(4000) }));
    // Another configuration of the same owner and home: never listed by the edited one.
    ok(await remoteOp(a, "create", other, { input: createBody(other).input, options: solo(5000) }));
    const [gone] = idsOn(a, 1, "gone") as [string];
    ok(await remoteOp(a, "create", gone, createBody(gone)));
    // The edited configuration (host b added, another stop grace) lists one workspace of the old one:
    // the other becomes an orphan, the third configuration's is not in scope, and `gone` is destroyed.
    ok(await remoteOp(a, "reconcile", null, { options: options(), workspaceIds: [adopted] }));
    const listed = await runBinary(["ls", "--json", "--home", a.remoteHome]);
    const orphaned = (JSON.parse(listed.stdout).workspaces as { workspaceId: string; orphanedAt: string | null }[]).filter((w) => w.orphanedAt !== null);
    expect(orphaned.map((w) => w.workspaceId)).toEqual([orphan]);
    expect(await workspacesOn(a)).toEqual([adopted, orphan, other].sort());
    // Each is still found where it lives, not on its hash host, and a destroy reaches it there.
    for (const id of [orphan, other]) expect(ok(await remoteOp(a, "inspect", id, { options: options() })).inspection.status).toBe("ready");
    expect(placed()).toEqual([adopted, orphan, other].sort());
    for (const id of [adopted, orphan, other]) ok(await remoteOp(a, "destroy", id, { options: options() }));
    expect(await workspacesOn(a)).toEqual([]);
    expect(placed()).toEqual([]);
  });

  test("a create under way while a reconcile forgets its record (its host says missing) is recorded again once it is done", async () => {
    const [late] = idsOn(a, 1, "late") as [string];
    writeFileSync(`${logA}.hold`, "");
    try {
      const creating = remoteOp(a, "create", late, createBody(late));
      await until("the remote create started", () => readFileSync(logA, "utf8").includes(`ARGV create --workspace-id ${late}`) || undefined);
      ok(await remoteOp(a, "reconcile", null, { options: options(), workspaceIds: [] }));
      rmSync(`${logA}.hold`);
      ok(await creating);
    } finally {
      rmSync(`${logA}.hold`, { force: true });
    }
    expect(await workspacesOn(a)).toEqual([late]);
    expect(placed()).toEqual([late]);
    ok(await remoteOp(a, "destroy", late, { options: options() }));
    expect(placed()).toEqual([]);
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

  test('"least-loaded" counts a host without a runtime home as zero executions, and leaves out only a host that does not answer', async () => {
    const dead = await deadUrl();
    const fleet = { stateDirectory: a.localHome, remote: { hosts: [fresh.url, dead], placement: "least-loaded" } };
    const [wanted] = idsOn(fresh, 1, "fresh", [a, fresh, { url: dead }].map((lab) => parseSshUrl(lab.url))) as [string];
    expect(existsSync(fresh.remoteHome)).toBe(false);
    const created = await remoteOp(a, "create", wanted, { input: createBody(wanted).input, options: fleet });
    ok(created);
    // Both a and the fresh host run nothing: the tie goes to the hash host, the fresh one.
    expect(await workspacesOn(fresh)).toEqual([wanted]);
    expect(await workspacesOn(a)).toEqual([]);
    expect(created.stderr).toContain(`least-loaded placement: leaving out ${parseSshUrl(dead).key}: ps exited 255: `);
    expect(created.stderr).not.toContain(parseSshUrl(fresh.url).key);
    expect(created.stderr).not.toContain("does not exist");
    ok(await remoteOp(a, "destroy", wanted, { options: fleet }));
    expect(await workspacesOn(fresh)).toEqual([]);
  });
});
