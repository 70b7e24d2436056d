/**
 * An attack on issue 24 with a hostile remote host (a real sshd on 127.0.0.1): what the
 * host writes on stderr reaches this side's stderr, where a daemon's log or an operator's
 * terminal shows it; it must arrive escaped, like every diagnostic of our own.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { withoutSsh } from "../support/tools.ts";
import { remoteOp } from "../support/operation.ts";
import { startExec } from "../support/daemon.ts";
import { envelope } from "../../kit/envelope.ts";

setDefaultTimeout(60_000);

const NO_SSHD = withoutSsh("remote/hostile-stderr.test.ts");
/** A forged diagnostic after a newline, a title change (OSC … BEL), a screen clear, a C1 CSI, a carriage return. */
const HOSTILE = "boom\\033]0;owned\\007\\033[2J\\302\\23331m\\rpaseo-host-runtime: all fine";
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

let scratch: { path: string; cleanup: () => void };
let lab: SshLab;

/** The real binary, except `inspect` and `exec-remote` of workspace `hostile`, which writes control bytes on stderr and fails. */
function remoteProgram(dir: string): string {
  const path = join(dir, "hostile-runtime");
  const fail = `{ printf '${HOSTILE}\\n' >&2; exit 1; }`;
  writeFileSync(path, ["#!/bin/sh", `[ "$1:$3" = inspect:hostile ] && ${fail}`, `[ "$1:$3" = exec-remote:hostile ] && ${fail}`, `exec ${BIN} "$@"`, ""].join("\n"));
  chmodSync(path, 0o755);
  return path;
}

if (!NO_SSHD) {
  beforeAll(async () => {
    scratch = tempDir("phr-remote-hostile-");
    lab = await startSshd(remoteProgram(scratch.path));
  });
  afterAll(async () => {
    await lab.stop();
    scratch.cleanup();
  });
}

describe.skipIf(NO_SSHD)("a remote host's stderr", () => {
  test("reaches this side's stderr with every control character escaped, and stdout stays empty", async () => {
    const result = await remoteOp(lab, "inspect", "hostile", { options: lab.options });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("boom\\x1b]0;owned\\x07\\x1b[2J\\u009b31m\\x0dpaseo-host-runtime: all fine");
    expect(result.stderr).not.toMatch(RAW_CONTROL);
  });

  test("an exec whose remote side fails before greeting: its words on the wrapper's stderr, escaped", async () => {
    const result = await startExec("hostile", envelope(["/bin/true"], { options: lab.options }), { prefix: lab.prefix }).done;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("boom\\x1b]0;owned");
    expect(result.stderr).not.toMatch(RAW_CONTROL);
  });
});
