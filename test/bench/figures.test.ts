/**
 * Plumbing of the bench's issue-14 figures, without timing anything: the empty program is
 * built with exactly the release flags and does nothing, the floors rotate with our runs,
 * process-level figures carry both floors, the peer family runs against a real runtime (this
 * binary stands in for the upstream fixture) and the concurrent-exec memory figure adds up
 * the wrappers of real execs. No assertion looks at a duration, a rate or a size.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../kit/scratch.ts";
import { cleanupAll } from "../../bench/procs.ts";
import { compileBunForwarder, compileEmptyProgram, withFloors } from "../../bench/floor.ts";
import { concurrentFigure, perWrapperFigure, rollupOf } from "../../bench/exec-overhead.ts";
import { peerFigures } from "../../bench/peer.ts";
import { clickFigures, SCENARIOS } from "../../bench/click.ts";
import { breakdown } from "../../bench/breakdown.ts";
import { figure, renderTable } from "../../bench/report.ts";
import { HARDENING_FLAGS, SPEED_FLAGS } from "../../release/compile.ts";
import { BIN } from "../../kit/binary.ts";
import { readyWorkspace } from "../../kit/workspace.ts";
import { linuxOnly } from "../support/platform.ts";
import { tolerating } from "../../src/platform/errno.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc/<pid>/smaps_rollup). */
const PROC = linuxOnly("bench/figures.test.ts, the memory figures read from /proc", "/proc/<pid>/smaps_rollup");

afterAll(() => cleanupAll());

describe("the empty program and the floors", () => {
  test("is an empty file compiled with every release flag; it prints nothing and exits 0", () => {
    const empty = compileEmptyProgram();
    expect(empty.flags).toEqual(["--compile", ...HARDENING_FLAGS, ...SPEED_FLAGS]);
    const run = Bun.spawnSync([empty.path], { stdout: "pipe", stderr: "pipe" });
    expect({ code: run.exitCode, stdout: run.stdout.toString(), stderr: run.stderr.toString() }).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  test("the least Bun wrapper runs its workload in a group of its own, forwards SIGTERM to it and exits with its code", async () => {
    const forwarder = compileBunForwarder();
    expect(forwarder.flags).toEqual(["--compile", ...HARDENING_FLAGS, ...SPEED_FLAGS]);
    const script = 'trap "exit 7" TERM; echo "$$ $(ps -o pgid= -p $$)"; while :; do sleep 0.05; done';
    const proc = Bun.spawn([forwarder.path, "/bin/sh", "-c", script], { stdout: "pipe", stderr: "pipe" });
    let pid: number | undefined;
    try {
      const reader = proc.stdout.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      const [shell, pgid] = first.trim().split(/\s+/).map(Number);
      pid = shell;
      expect(pgid).toBe(pid!);
      expect(pid).not.toBe(proc.pid);
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(7);
    } finally {
      // On a failure the looping shell would outlive the test in its own group: a group whose
      // id is the shell's pid exists only if the shell leads it, so nothing else is signalled.
      proc.kill("SIGKILL");
      if (Number.isInteger(pid) && pid! > 1) tolerating(["ESRCH"], undefined, () => process.kill(-pid!, "SIGKILL"));
    }
  });

  test("every round runs ours, the empty program and /bin/true once, in a rotating order; warm-up rounds are dropped", async () => {
    const calls: string[] = [];
    let n = 0;
    const runs = await withFloors(
      { warmup: 1, trials: 3 },
      async (round) => {
        calls.push(`ours${round}`);
        return round;
      },
      { empty: async () => (calls.push("empty"), ++n), true: async () => (calls.push("true"), ++n) },
    );
    expect(calls).toEqual(["ours0", "empty", "true", "empty", "true", "ours1", "true", "ours2", "empty", "ours3", "empty", "true"]);
    expect(runs.ours).toEqual([1, 2, 3]);
    expect(runs.empty).toHaveLength(3);
    expect(runs.true).toHaveLength(3);
  });

  test("a process-level figure carries both floors and their ratios, and the table shows them", () => {
    const f = figure({
      id: "lifecycle.x",
      family: "lifecycle",
      title: "x",
      unit: "ms",
      better: "lower",
      value: 12,
      baseline: { label: "empty program", value: 8 },
      floors: { empty: 8, true: 2, trueLabel: "/bin/true" },
      aim: { text: "≤ 1.3× empty", check: ({ ratio }) => ratio <= 1.3 },
    });
    expect(f.floors).toEqual({ empty: { value: 8, ratio: 1.5 }, true: { label: "/bin/true", value: 2, ratio: 6 } });
    expect(f.aim).toEqual({ text: "≤ 1.3× empty", met: false });
    const table = renderTable([f]);
    expect(table).toContain("×empty");
    expect(table).toMatch(/1\.50×\s+1\.50×\s+6\.00×\s+≤ 1\.3× empty\s+FAR/);
    expect(table).toContain("floors (p50, alternated): empty program 8.00 ms, /bin/true 2.00 ms");
  });
});

describe("figures driven through the compiled binary", () => {
  test("the peer family, with this binary as the peer: inspect and exec figures against it", async () => {
    const figures = await peerFigures({ trials: 1, warmup: 0, peer: BIN });
    expect(figures.map((f) => f.id)).toEqual(["peer.inspect", "peer.exec"]);
    for (const f of figures) {
      expect(f).toMatchObject({ family: "peer", unit: "ms", better: "lower", baseline: { label: "the peer runtime" }, aim: { text: "≥ 25× faster (ratio ≤ 0.04)" } });
      expect(f.value).toBeGreaterThan(0);
      expect(f.ratio).toBeCloseTo(f.value! / f.baseline!.value!, 10);
      expect((f.stats as { dialect: string }).dialect).toBe("seed");
    }
  });

  test("the per-click family: each scenario through the binary and direct, one figure per isolation (sandbox skipped, saying why)", async () => {
    const ws = await readyWorkspace("bench-click");
    try {
      const figures = await clickFigures({ trials: 1, warmup: 0, workspace: ws, sandboxed: "no sandbox in this test" });
      expect(figures.map((f) => f.id)).toEqual(SCENARIOS.flatMap((s) => [`click.${s}`, `click.${s}.sandboxed`]));
      for (const f of figures.filter((f) => !f.id.endsWith(".sandboxed"))) {
        expect(f).toMatchObject({ family: "click", unit: "ms", better: "lower", baseline: { label: "the same calls, direct" } });
        expect(f.ratio).toBeCloseTo(f.value! / f.baseline!.value!, 10);
        // The inspect is part of the click: its share is carried, and never more than the whole.
        const stats = f.stats as { inspect: { p50: number }; ours: { p50: number } };
        expect(stats.inspect.p50).toBeGreaterThan(0);
        expect(stats.inspect.p50).toBeLessThan(stats.ours.p50);
      }
      expect(figures.find((f) => f.id === "click.file-read")?.aim).toMatchObject({ text: "≤ 1.5× direct" });
      expect(figures.find((f) => f.id === "click.file-read.sandboxed")).toMatchObject({ skipped: "no sandbox in this test", aim: { text: "≤ 2× direct", met: null } });
      expect(renderTable(figures)).toContain("9. Per click");
    } finally {
      ws.cleanup();
    }
  });

  test("the breakdown traces the binary's own phases of inspect and exec, from spawn to the caller's end", async () => {
    const ws = await readyWorkspace("bench-trace");
    try {
      const calls = await breakdown({ trials: 1, warmup: 0, workspace: ws, sandboxed: "no sandbox in this test" });
      expect(calls.map((c) => c.call)).toEqual(["inspect", "exec /bin/true, pipes", "exec /bin/true, PTY"]);
      const names = (call: string) => calls.find((c) => c.call === call)!.phases.map(([name]) => name);
      expect(names("inspect")).toEqual(["process start (exec, Bun, first modules)", "main", "command loaded", "request", "store open", "inspected", "responded", "store closed", "exiting", "process exit (seen by the caller)"]);
      expect(names("exec /bin/true, pipes")).toEqual(expect.arrayContaining(["envelope", "store open", "reservation", "started", "exit event", "store closed", "log line"]));
      for (const c of calls) {
        expect(c.phases.every(([, ms]) => ms >= 0)).toBe(true);
        expect(c.phases.reduce((sum, [, ms]) => sum + ms, 0)).toBeCloseTo(c.wallMs, 6);
      }
    } finally {
      ws.cleanup();
    }
  });

  test("without PASEO_HOST_RUNTIME_TRACE (or with a relative path) the binary writes no trace, and its output is the same", async () => {
    const dir = tempDir("phr-trace-off-");
    try {
      const request = '{"protocolVersion":1,"options":{}}\n';
      const run = (env: Record<string, string>) => Bun.spawnSync([BIN, "inspect", "--workspace-id", "none"], { cwd: dir.path, env: { ...env, PASEO_HOST_RUNTIME_HOME: join(dir.path, "home") }, stdin: new TextEncoder().encode(request) });
      const off = run({});
      const relative = run({ PASEO_HOST_RUNTIME_TRACE: "trace.jsonl" });
      const on = run({ PASEO_HOST_RUNTIME_TRACE: join(dir.path, "on.jsonl") });
      for (const r of [off, relative, on]) expect({ code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() }).toEqual({ code: 0, stdout: '{"type":"inspection","protocolVersion":1,"inspection":{"status":"missing"}}\n', stderr: "" });
      expect(readdirSync(dir.path).sort()).toEqual(["on.jsonl"]);
      const line = JSON.parse(readFileSync(join(dir.path, "on.jsonl"), "utf8"));
      expect(line).toMatchObject({ pid: on.pid, command: "inspect" });
      expect(line.marks.map(([name]: [string]) => name)).toEqual(["evaluated", "main", "command loaded", "request", "exiting"]);
    } finally {
      dir.cleanup();
    }
  });

  test.skipIf(PROC)("concurrent execs: one memory figure summing every wrapper, against the 4 GiB budget", async () => {
    const ws = await readyWorkspace("bench-conc");
    try {
      const { figure: f } = await concurrentFigure({ workspace: ws, concurrent: 3 });
      expect(f).toMatchObject({ id: "exec.concurrent.memory", unit: "MiB", baseline: { value: 4096 }, stats: { count: 3 } });
      const stats = f.stats as { pssMiB: number; privateMiB: number; rssSumMiB: number };
      expect(stats.pssMiB).toBeGreaterThan(0);
      expect(stats.rssSumMiB).toBeGreaterThanOrEqual(stats.pssMiB);
    } finally {
      ws.cleanup();
    }
  });

  test.skipIf(PROC)("PSS per wrapper: ours from the concurrent figure, against as many least Bun wrappers holding cat", async () => {
    const ws = await readyWorkspace("bench-conc");
    try {
      const concurrent = await concurrentFigure({ workspace: ws, concurrent: 3 });
      const f = await perWrapperFigure({ forwarder: compileBunForwarder(), concurrent: 3 }, concurrent.pssPerWrapperMiB);
      const stats = f.stats as { oursPssMiB: number; floorPssMiB: number; floorPrivateMiB: number };
      expect(f).toMatchObject({ id: "exec.concurrent.memory-per-wrapper", unit: "MiB", aim: { text: "≤ 3 MiB (issue 33)" }, stats: { count: 3 } });
      expect(stats.oursPssMiB).toBeCloseTo(concurrent.figure.value! / 3, 10);
      expect(f.baseline?.value).toBe(stats.floorPssMiB);
      expect(stats.floorPssMiB).toBeGreaterThan(0);
      expect(stats.floorPrivateMiB).toBeGreaterThan(0);
    } finally {
      ws.cleanup();
    }
  });

  test.skipIf(PROC)("smaps_rollup is read for a live process and null for one that is gone", () => {
    expect(rollupOf(process.pid)?.rss).toBeGreaterThan(0);
    const gone = Bun.spawnSync(["/bin/true"]).pid;
    expect(rollupOf(gone)).toBeNull();
  });
});
