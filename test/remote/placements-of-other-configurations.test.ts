/**
 * Placement records of one configuration are not another's to forget. Two `--remote` runtimes
 * of one daemon share the local home and the owner: Y places across hosts a and b
 * (least-loaded), X reaches host a with its own remote home. X's reconcile asks a about the
 * workspaces recorded there; its inspect looks in X's home and hears `missing` for Y's. Before
 * the fix X forgot Y's record, Y then routed its workspace by hash to b, and a's reconcile
 * (told nothing of it) destroyed a workspace the daemon still listed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hashPlacement } from "../../src/remote/placement.ts";
import { parseSshUrl } from "../../src/ssh-url.ts";
import { BIN, runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { createInput, ok, remoteOp } from "../support/operation.ts";
import { makeRepo } from "../support/git.ts";
import { withoutSsh } from "../support/tools.ts";

setDefaultTimeout(60_000);

const NO_SSHD = withoutSsh("remote/placements-of-other-configurations.test.ts");

let a: SshLab;
let b: SshLab;
let scratch: { path: string; cleanup: () => void };
let repo: string;

if (!NO_SSHD) {
  beforeAll(async () => {
    scratch = tempDir("phr-rplc-");
    // Host b cannot count its executions, so least-loaded leaves it out and places on a.
    const noPs = join(scratch.path, "no-ps-runtime");
    writeFileSync(noPs, `#!/bin/sh\n[ "$1" = ps ] && exit 3\nexec ${BIN} "$@"\n`);
    chmodSync(noPs, 0o755);
    a = await startSshd();
    b = await startSshd(noPs, a);
    repo = makeRepo(join(scratch.path, "repo"));
  });
  afterAll(async () => {
    await b.stop();
    await a.stop();
    scratch.cleanup();
  });
}

describe.skipIf(NO_SSHD)("two remote runtimes sharing a local home and an owner", () => {
  test("one's reconcile keeps the placement records of the other's workspaces", async () => {
    const y = { stateDirectory: a.localHome, owner: "m", remote: { hosts: [b.url], placement: "least-loaded" } };
    const x = { stateDirectory: a.localHome, owner: "m", remote: { stateDirectory: join(scratch.path, "x-home") } };
    const hosts = [a.url, b.url].map((url) => parseSshUrl(url));
    let id = "";
    for (let i = 0; hashPlacement(hosts, (id = `w-${i}`)).key !== hosts[1]!.key; i++);
    const input = createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `agent-${id}`, baseRef: "main" });
    const made = await remoteOp(a, "create", id, { input, options: y });
    ok(made);
    expect(made.stderr).toContain("least-loaded placement: leaving out");
    ok(await remoteOp(a, "reconcile", null, { options: x, workspaceIds: [] }));
    // Y's daemon still lists it: it stays on a, where it lives.
    ok(await remoteOp(a, "reconcile", null, { options: y, workspaceIds: [id] }));
    expect(ok(await remoteOp(a, "inspect", id, { options: y })).inspection.status).toBe("ready");
    const listed = await runBinary(["ls", "--json", "--home", a.remoteHome]);
    expect(JSON.parse(listed.stdout).workspaces.map((w: { workspaceId: string }) => w.workspaceId)).toEqual([id]);
    ok(await remoteOp(a, "destroy", id, { options: y }));
  });
});
