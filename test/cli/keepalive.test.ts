/**
 * The keepalives of a `--remote` call (src/keepalive.ts), in a process of their own whose stdout
 * is /dev/full: a failing stdout must not end the call from the keepalive's timer.
 */
import { describe, expect, test } from "bun:test";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { linuxOnly } from "../support/platform.ts";

/** /dev/full, a stdout that refuses every write with ENOSPC, is Linux's. */
const NO_DEV_FULL = linuxOnly("cli/keepalive.test.ts", "/dev/full");

const KEEPALIVE = join(import.meta.dir, "..", "..", "src", "keepalive.ts");

describe.skipIf(NO_DEV_FULL)("keepalives", () => {
  test("a stdout that fails (ENOSPC) stops them with one diagnostic; the call goes on", () => {
    const script = `const { startKeepalive } = await import(${JSON.stringify(KEEPALIVE)}); startKeepalive(); setTimeout(() => console.error("still working"), 400);`;
    const full = openSync("/dev/full", "w");
    try {
      const run = Bun.spawnSync([process.execPath, "-e", script], { stdout: full, stderr: "pipe", env: { ...process.env, PASEO_HOST_RUNTIME_KEEPALIVE_MS: "100" } });
      const stderr = run.stderr.toString();
      expect(run.exitCode).toBe(0);
      expect(stderr).toContain("keepalives stopped: stdout failed (ENOSPC");
      expect(stderr.match(/keepalives stopped/g)).toHaveLength(1);
      expect(stderr).toContain("still working");
    } finally {
      closeSync(full);
    }
  });
});
