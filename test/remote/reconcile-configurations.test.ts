/**
 * An attack on issue 23's "reconcile scoped by owner + configuration", through `--remote`
 * (a real sshd on 127.0.0.1): two configured runtimes with the same explicit owner and the same
 * host, whose options differ only in what stays on the daemon's side (options.remote). The
 * remote side must still tell their workspaces apart: each reconcile keeps the other's.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { createInput, ok, remoteOp } from "../support/operation.ts";
import { makeRemote, repoLab } from "../support/git.ts";
import type { Lab } from "../../kit/scratch.ts";
import { withoutSsh } from "../support/tools.ts";

setDefaultTimeout(60_000);

const NO_SSHD = withoutSsh("remote/reconcile-configurations.test.ts");

let lab: SshLab;
if (!NO_SSHD) {
  beforeAll(async () => {
    lab = await startSshd();
  });
  afterAll(async () => await lab.stop());
}

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab("phr-rrec-")));
afterEach(() => t.cleanup());

describe.skipIf(NO_SSHD)("two remote runtimes, one explicit owner, one host", () => {
  test("each reconciles without destroying the other's workspace on the host", async () => {
    const url = makeRemote(repo, join(t.dir, "origin.git"));
    const a = { ...lab.options, owner: "my-machine" };
    const b = { ...a, remote: { ...lab.options.remote, idleTimeoutSeconds: 90 } };
    const made = (id: string, options: object) => remoteOp(lab, "create", id, { input: createInput(id, { kind: "git", url, revision: "feature" }), options });
    ok(await made("ra1", a));
    ok(await made("rb1", b));
    ok(await remoteOp(lab, "reconcile", null, { options: a, workspaceIds: ["ra1"] }));
    ok(await remoteOp(lab, "reconcile", null, { options: b, workspaceIds: ["rb1"] }));
    expect(ok(await remoteOp(lab, "inspect", "ra1", { options: a })).inspection.status).toBe("ready");
    expect(ok(await remoteOp(lab, "inspect", "rb1", { options: b })).inspection.status).toBe("ready");
    // Each still reconciles its own away.
    ok(await remoteOp(lab, "reconcile", null, { options: b, workspaceIds: [] }));
    expect(ok(await remoteOp(lab, "inspect", "rb1", { options: b })).inspection).toEqual({ status: "missing" });
    expect(ok(await remoteOp(lab, "inspect", "ra1", { options: a })).inspection.status).toBe("ready");
    ok(await remoteOp(lab, "destroy", "ra1", { options: a }));
  });
});
