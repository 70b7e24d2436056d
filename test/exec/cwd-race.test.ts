/**
 * The cwd TOCTOU attack of issue 12: while execs launch with cwd "sub", a racing process keeps
 * exchanging the real directory `sub` with a symlink to a directory outside the workspace.
 * Each exec must either be refused (it met the symlink) or start in exactly the real `sub`:
 * never outside. Before the fix 27 of 400 execs started outside.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { lstatSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { tempDir } from "../../kit/scratch.ts";
import { ISOLATIONS, cannotIsolate } from "../support/containment.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";

/** Race loops: modest by default, larger with PASEO_STRESS=1. */
const TRIALS = process.env.PASEO_STRESS === "1" ? 1000 : 100;
/** Execs launched at once (the daemon starts several). */
const PARALLEL = 4;
/**
 * A refusal: by the wrapper (it met the symlink), or in the sandbox by its init, which walks
 * the path again inside and accepts only the very directory the wrapper checked.
 */
const REFUSED = /cwd "(sub|\/.*\/sub)" (is a symlink|cannot be opened|changed while the sandbox started)/;

for (const isolation of ISOLATIONS) {
  describe.skipIf(cannotIsolate(isolation, "exec/cwd-race.test.ts"))(`isolation ${JSON.stringify(isolation)}`, () => {
    let ws: ReadyWorkspace;
    let outside: { path: string; cleanup: () => void };
    beforeAll(async () => {
      ws = await readyWorkspace("race", "seed", { isolation });
      outside = tempDir("phr-outside-");
    });
    afterAll(() => {
      ws.cleanup();
      outside.cleanup();
    });

    function identity(path: string): string {
      const stat = lstatSync(path, { bigint: true });
      return `${stat.dev}:${stat.ino}`;
    }

    /** The workload reports the device:inode of its own working directory. */
    async function execInSub(): Promise<ExecResult> {
      const handle = startExec(ws.id, envelope(["stat", "-c", "%d:%i", "."], { options: ws.options, env: { PATH }, cwd: "sub" }));
      handle.closeStdin();
      return await handle.done;
    }

    test(`a cwd swapped for a symlink to outside while execs launch never starts a workload outside (${TRIALS} trials)`, async () => {
      mkdirSync(join(ws.root, "sub"));
      // In the sandbox the decoy must name a directory the sandbox shows (its /tmp is private).
      symlinkSync(isolation === "sandbox" ? "/etc" : outside.path, join(ws.root, "decoy"));
      const inside = identity(join(ws.root, "sub"));
      const racer = Bun.spawn([process.execPath, join(import.meta.dir, "..", "support", "swap-racer.ts"), join(ws.root, "sub"), join(ws.root, "decoy")], { stdout: "pipe", stderr: "inherit" });
      const counts = { launchedInside: 0, escaped: 0, refused: 0, refusedInsideSandbox: 0 };
      const unexpected: string[] = [];
      try {
        const reader = racer.stdout.getReader();
        expect(new TextDecoder().decode((await reader.read()).value)).toContain("racing");
        for (let done = 0; done < TRIALS; done += PARALLEL) {
          const results = await Promise.all(Array.from({ length: Math.min(PARALLEL, TRIALS - done) }, execInSub));
          for (const result of results) {
            if (result.events.length > 0) {
              if (result.code === 0 && result.stdout.toString() === `${inside}\n`) counts.launchedInside++;
              else if (result.code === 0) counts.escaped++;
              else unexpected.push(`launched, exit ${result.code}: ${result.stderr}`);
            } else if (result.code === 1 && REFUSED.test(result.stderr)) {
              counts.refused++;
              if (result.stderr.includes("sandbox")) counts.refusedInsideSandbox++;
            } else unexpected.push(`exit ${result.code}, events ${JSON.stringify(result.events)}: ${result.stderr}`);
          }
        }
      } finally {
        racer.kill("SIGKILL");
        await racer.exited;
      }
      console.log(`cwd race, ${TRIALS} trials: ${JSON.stringify(counts)}`);
      expect(unexpected).toEqual([]);
      expect(counts.escaped).toBe(0);
      expect(counts.launchedInside + counts.refused).toBe(TRIALS);
      // The race was real: some execs met the real directory and ran, others met the symlink.
      expect(counts.launchedInside).toBeGreaterThan(0);
      expect(counts.refused).toBeGreaterThan(0);
    }, 600_000);
  });
}
