/**
 * `npm run demo` is the README's main job: it walks every operator command against the compiled
 * binary and checks each step. Run here so a change that alters what a command shows (a new
 * `ls` column) fails the suite instead of the operator's first try.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import "../kit/binary.ts";

test("the demo (npm run demo, after the build) behaves as it shows, step by step", async () => {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "..", "release", "demo.ts")], { stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  expect(stderr.match(/demo failed at step .*/)?.[0] ?? "", stdout.slice(-2000)).toBe("");
  expect(proc.exitCode).toBe(0);
  expect(stdout).toContain("demo complete: every step behaved as shown.");
}, 120_000);
