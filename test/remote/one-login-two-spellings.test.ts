/**
 * One remote login written two ways (`ssh://root@127.0.0.1:P` and `ssh://127.0.0.1:P`, where
 * ssh logs in as root anyway) is one machine with one remote home. Before the check, a
 * reconcile treated them as two hosts: each was told to keep only the ids recorded under its
 * own spelling, so the other spelling's reconcile destroyed, on that same machine, a workspace
 * the daemon had just listed. Now such a host list is refused before any host is contacted.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../../kit/scratch.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { createInput, ok, remoteOp } from "../support/operation.ts";
import { makeRepo } from "../support/git.ts";
import { withoutSsh } from "../support/tools.ts";

setDefaultTimeout(60_000);

const NO_SSHD = withoutSsh("remote/one-login-two-spellings.test.ts");

let lab: SshLab;
let scratch: { path: string; cleanup: () => void };
let repo: string;

if (!NO_SSHD) {
  beforeAll(async () => {
    scratch = tempDir("phr-spell-");
    lab = await startSshd();
    repo = makeRepo(join(scratch.path, "repo"));
  });
  afterAll(async () => {
    await lab.stop();
    scratch.cleanup();
  });
}

describe.skipIf(NO_SSHD)("one login written two ways", () => {
  test("a reconcile is refused, naming both spellings, and the listed workspace stays", async () => {
    // The lab's sshd lets root in (its URL says root@): without a user, ssh logs in as this user, root in these tests.
    const otherSpelling = lab.url.replace("ssh://root@", "ssh://");
    const options = { ...lab.options, remote: { ...(lab.options.remote as Record<string, unknown>), hosts: [otherSpelling] } };
    const input = createInput("kept", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "agent-kept", baseRef: "main" });
    ok(await remoteOp(lab, "create", "kept", { input, options }));
    const reconciled = await remoteOp(lab, "reconcile", null, { options, workspaceIds: ["kept"] });
    expect(reconciled.code).toBe(1);
    expect(reconciled.stderr).toContain("are one login (root@127.0.0.1:");
    expect(ok(await remoteOp(lab, "inspect", "kept", { options })).inspection.status).toBe("ready");
    ok(await remoteOp(lab, "destroy", "kept", { options }));
  });
});
