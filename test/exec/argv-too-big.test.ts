/**
 * An attack on issue 24's "size and nesting limits on input" that held: an envelope within
 * the 1 MiB frame whose argv the kernel refuses (E2BIG). The exec ends in words before launch,
 * as documented (exit 126, the reason on stderr, no event), never a hang or a crash.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PATH, envelope } from "../../kit/envelope.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { startExec } from "../support/daemon.ts";
import { createInput, ok, op } from "../support/operation.ts";

let t: Lab;
beforeEach(async () => {
  t = lab("phr-argv-big-");
  const dir = join(t.dir, "project");
  mkdirSync(dir);
  ok(await op("create", "w1", { input: createInput("w1", { kind: "host-directory", path: dir }), options: t.options }));
});
afterEach(() => t.cleanup());

test("one argv word of 900 KB (over the kernel's per-word limit): exit 126 naming E2BIG, no event", async () => {
  const handle = startExec("w1", envelope(["/bin/true", "x".repeat(900_000)], { options: t.options, env: { PATH } }));
  handle.closeStdin();
  const result = await handle.done;
  expect(result.code).toBe(126);
  expect(result.events).toEqual([]);
  expect(result.stderr).toContain("E2BIG");
  expect(result.stderr.length).toBeLessThan(1000);
});
