/**
 * Where an execution's way out is planned (src/sandbox/network/egress-plan.ts): the proxy's
 * socket goes in the workspace's storage when its path fits a Unix socket address, else in a
 * temp dir of its own, removed at close.
 */
import { afterEach, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { tempDir, type Scratch } from "../../kit/scratch.ts";
import { planEgress } from "../../src/sandbox/network/egress-plan.ts";
import { linuxOnly } from "../support/platform.ts";

/** The plan holds a socket path on Linux only (macOS: a loopback TCP port). */
const skip = linuxOnly("sandbox-network/egress-plan.test.ts", "the proxy's Unix socket");

let scratch: Scratch | undefined;
let temporary: string | null = null;
afterEach(() => {
  if (temporary) rmSync(temporary, { recursive: true, force: true });
  temporary = null;
  scratch?.cleanup();
});

test.skipIf(skip)("a storage path short in characters but too long in bytes puts the socket in a temp dir: sun_path holds bytes", () => {
  scratch = tempDir("phr-egress-plan-");
  // 40 two-byte characters: the path is under 104 characters, over 103 bytes.
  const dir = join(scratch.path, "é".repeat(40));
  const plan = planEgress(dir, "x1", []);
  temporary = plan.temporary;
  expect(join(dir, "egress-x1.sock").length).toBeLessThanOrEqual(103);
  expect(Buffer.byteLength(join(dir, "egress-x1.sock"))).toBeGreaterThan(103);
  expect(plan.temporary).not.toBeNull();
  expect(plan.socketPath).toBe(join(plan.temporary!, "egress-x1.sock"));
  expect(Buffer.byteLength(plan.socketPath!)).toBeLessThanOrEqual(103);
});

test.skipIf(skip)("a storage path that fits keeps the socket there, no temp dir", () => {
  scratch = tempDir("phr-egress-plan-");
  const plan = planEgress(scratch.path, "x1", []);
  temporary = plan.temporary;
  expect(plan).toEqual({ socketPath: join(scratch.path, "egress-x1.sock"), dir: scratch.path, execId: "x1", allow: [], temporary: null });
});
