/**
 * An attack on issue 24's "printable escaping of everything shown", for the human
 * outputs test/operator/escaping.test.ts does not reach: `orphans`, whose every line names a
 * workspace the daemon chose the id of.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { createInput, ok, op } from "../support/operation.ts";
import { lab, type Lab } from "../../kit/scratch.ts";

/** A forged line after a newline, a title change (OSC … BEL), a screen clear and a C1 CSI. */
const FORGED = "  removed: prod (ready, configuration 00000000, not listed since 2026-12-01T00:00:00.000Z)";
const HOSTILE = `w\n${FORGED}\u001b]0;owned\u0007\u001b[2J\u009b31m`;
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const OWNER = "my-machine";

let t: Lab;
beforeEach(() => (t = lab("phr-orphans-esc-")));
afterEach(() => t.cleanup());

function expectEscaped(text: string): void {
  expect(text).not.toMatch(RAW_CONTROL);
  for (const line of text.split("\n")) expect(line.startsWith(FORGED)).toBe(false);
  expect(text).toContain("\\x0a");
}

test("orphans (dry run and --remove) shows a hostile workspace id and root escaped", async () => {
  const dir = join(t.dir, "project");
  mkdirSync(dir);
  const before = { ...t.options, owner: OWNER };
  const edited = { ...before, stopTimeoutMs: 900 };
  for (const id of ["kept", HOSTILE]) ok(await op("create", id, { input: createInput(id, { kind: "host-directory", path: dir }), options: before }));
  // The edited configuration lists only "kept": the hostile one is an orphan from now on.
  ok(await op("reconcile", null, { workspaceIds: ["kept"], options: edited }));
  const dry = await runBinary(["orphans", "--home", t.home, "--owner", OWNER]);
  expect(dry.code).toBe(0);
  expect(dry.stdout).toContain("1 orphan(s)");
  expectEscaped(dry.stdout);
  const removed = await runBinary(["orphans", "--remove", "--home", t.home, "--owner", OWNER]);
  expect(removed.code, removed.stderr).toBe(0);
  expectEscaped(removed.stdout);
});
