/**
 * A reconcile that lists a workspace whose create is placing it right now. The reconcile read
 * the placement records before the create wrote its own, so it did not know the host; the
 * create placed on b (least-loaded: a cannot count its executions), not on the hash host a.
 * Before the fix the listed id went to a alone, and b, its reconcile answered only after the
 * create finished, destroyed the workspace its daemon had just listed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hashPlacement } from "../../src/remote/placement.ts";
import { parseSshUrl } from "../../src/ssh-url.ts";
import { BIN } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { createInput, ok, remoteOp } from "../support/operation.ts";
import { makeRepo } from "../support/git.ts";
import { until } from "../support/poll.ts";
import { withoutSsh } from "../support/tools.ts";

setDefaultTimeout(60_000);

const NO_SSHD = withoutSsh("remote/reconcile-during-create.test.ts");

let a: SshLab;
let b: SshLab;
let scratch: { path: string; cleanup: () => void };
let repo: string;
let hold: string;
let waiting: string;

/** A remote program at `path`: `before` (shell) runs first, then the real binary. */
function wrapped(path: string, before: string): string {
  writeFileSync(path, `#!/bin/sh\n${before}\nexec ${BIN} "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}

if (!NO_SSHD) {
  beforeAll(async () => {
    scratch = tempDir("phr-rdc-");
    hold = join(scratch.path, "hold");
    waiting = join(scratch.path, "waiting");
    // a cannot count its executions (least-loaded leaves it out); b's reconcile answers late.
    a = await startSshd(wrapped(join(scratch.path, "a-runtime"), `[ "$1" = ps ] && exit 3`));
    const late = `if [ "$1" = reconcile ] && [ -e ${hold} ]; then : > ${waiting}; for i in $(seq 600); do [ -e ${hold} ] || break; sleep 0.05; done; fi`;
    b = await startSshd(wrapped(join(scratch.path, "b-runtime"), late), a);
    repo = makeRepo(join(scratch.path, "repo"));
  });
  afterAll(async () => {
    rmSync(hold, { force: true });
    await b.stop();
    await a.stop();
    scratch.cleanup();
  });
}

describe.skipIf(NO_SSHD)("a reconcile while a create places the workspace it lists", () => {
  test("keeps it on the host the create chose", async () => {
    const options = { stateDirectory: a.localHome, remote: { hosts: [b.url], placement: "least-loaded" } };
    const hosts = [a.url, b.url].map((url) => parseSshUrl(url));
    let id = "";
    for (let i = 0; hashPlacement(hosts, (id = `c-${i}`)).key !== hosts[0]!.key; i++);
    writeFileSync(hold, "");
    const reconciling = remoteOp(a, "reconcile", null, { options, workspaceIds: [id] });
    await until("b's reconcile waits", () => existsSync(waiting));
    const input = createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `agent-${id}`, baseRef: "main" });
    ok(await remoteOp(a, "create", id, { input, options }));
    rmSync(hold);
    ok(await reconciling);
    expect(ok(await remoteOp(a, "inspect", id, { options })).inspection.status).toBe("ready");
    ok(await remoteOp(a, "destroy", id, { options }));
  });
});
