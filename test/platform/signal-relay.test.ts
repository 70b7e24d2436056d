/**
 * The signal relay (src/platform/signal-relay.ts): a forwarded signal goes from the handler
 * the kernel runs straight to the leader's process group, without the event loop; never once
 * the leader is reaped, never for a process that is not this one's child; and disarming puts
 * the previous handlers back. Linux x86-64 on kernel 6.9+ only (elsewhere arm() declines).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { currentAction } from "../../src/platform/libc.ts";
import { SignalRelay } from "../../src/platform/signal-relay.ts";
import { isLinux } from "../../src/platform/os.ts";
import { tempDir, type Scratch } from "../support/scratch.ts";

const SIGUSR2 = 12;
const supported = isLinux && process.arch === "x64";
if (!supported) console.warn(`skipped: platform/signal-relay.test.ts: the signal relay is built for Linux x64 only; this is ${process.platform}-${process.arch}`);

/**
 * What the kernel keeps of an action (glibc's struct bytes): the handler, the mask's first
 * 64 bits (the rest of glibc's sigset_t is not the kernel's), the flags but SA_RESTORER.
 */
function meaning(action: Uint8Array) {
  const view = new DataView(action.buffer);
  return { handler: view.getBigUint64(0, true), mask: view.getBigUint64(8, true), flags: view.getUint32(136, true) & ~0x04000000 };
}

/** Waits with the event loop blocked: only a handler can act meanwhile. */
function blockUntil(done: () => boolean, ms: number): boolean {
  for (const deadline = performance.now() + ms; performance.now() < deadline; Bun.sleepSync(5)) if (done()) return true;
  return done();
}

/** A group member that appends to `file` on SIGUSR2, in the background of a leader running `leader`. */
function groupWithMember(file: string, leader: string) {
  const member = `(trap 'echo got >> ${file}' USR2; while :; do sleep 0.01; done) &`;
  return Bun.spawn(["sh", "-c", `${member} ${leader}`], { detached: true, stdio: ["ignore", "ignore", "ignore"] });
}

let dir: Scratch | undefined;
let groups: number[] = [];
afterEach(() => {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  groups = [];
  dir?.cleanup();
  dir = undefined;
});

describe.skipIf(!supported)("the signal relay", () => {
  test("a signal to this process reaches the leader's group while the event loop is blocked", () => {
    dir = tempDir("relay-");
    const file = join(dir.path, "got");
    const proc = groupWithMember(file, "while :; do sleep 0.01; done");
    groups.push(proc.pid);
    const before = currentAction(SIGUSR2);
    const relay = SignalRelay.arm(proc.pid, [SIGUSR2]);
    expect(relay).not.toBeNull();
    try {
      // Let the member install its trap, then signal ourselves; nothing here yields to the loop.
      Bun.sleepSync(150);
      process.kill(process.pid, "SIGUSR2");
      expect(blockUntil(() => existsSync(file), 3000)).toBe(true);
    } finally {
      relay!.disarm();
    }
    expect(meaning(currentAction(SIGUSR2))).toEqual(meaning(before));
  });

  test("nothing is relayed once the leader is reaped, not even to its group's survivors", async () => {
    dir = tempDir("relay-");
    const file = join(dir.path, "got");
    const proc = groupWithMember(file, "sleep 0.2");
    groups.push(proc.pid);
    const relay = SignalRelay.arm(proc.pid, [SIGUSR2]);
    expect(relay).not.toBeNull();
    try {
      await proc.exited;
      process.kill(process.pid, "SIGUSR2");
      expect(blockUntil(() => existsSync(file), 300)).toBe(false);
    } finally {
      relay!.disarm();
    }
    // The survivor was there to receive it: signalled directly, it answers.
    process.kill(-proc.pid, "SIGUSR2");
    expect(blockUntil(() => existsSync(file), 3000)).toBe(true);
  });

  test("declines a process that is not this process's child, and changes nothing", () => {
    const before = currentAction(SIGUSR2);
    expect(SignalRelay.arm(1, [SIGUSR2])).toBeNull();
    expect(meaning(currentAction(SIGUSR2))).toEqual(meaning(before));
  });
});
