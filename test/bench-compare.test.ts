/**
 * release/bench-compare.ts: the release workflow's comparison of `npm run bench -- --quick`
 * with the previous release's bench-results.json. The documents are made with bench/report.ts's
 * own figure() and skipped(), in the shape bench/run.ts writes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { figure, skipped, type Figure } from "../bench/report.ts";
import { compareRuns, readBenchRun, renderComparison } from "../release/bench-compare.ts";
import { tempDir, type Scratch } from "../kit/scratch.ts";

const machine = { cpu: "AMD EPYC 7763 64-Core Processor", cores: 4, memoryGiB: 15.6, os: "Linux 6.8.0", platform: "linux-x64", bun: "1.4.4" };

/** A bench results document: inspect (lower is better, against empty Bun), pipes throughput (higher is better). */
function results(inspectMs: number, emptyMs: number, pipesMiBs: number, extra: Figure[] = [], overrides: Record<string, unknown> = {}) {
  return {
    schema: 1,
    mode: "quick",
    machine,
    figures: [
      figure({ id: "lifecycle.inspect", family: "lifecycle", title: "inspect", unit: "ms", better: "lower", value: inspectMs, baseline: { label: "empty Bun", value: emptyMs } }),
      figure({ id: "throughput.pipes", family: "throughput", title: "pipes throughput", unit: "MiB/s", better: "higher", value: pipesMiBs, baseline: { label: "direct", value: 1000 } }),
      ...extra,
    ],
    ...overrides,
  };
}

const row = (c: ReturnType<typeof compareRuns>, id: string) => c.rows.find((r) => r.id === id);

describe("comparing two runs", () => {
  test("a lower-is-better figure 25 % worse is flagged; 15 % worse is not", () => {
    const previous = readBenchRun(results(10, 5, 900));
    const worse = compareRuns(previous, readBenchRun(results(12.5, 5, 900)));
    expect(worse.notCompared).toBeNull();
    expect(row(worse, "lifecycle.inspect")).toEqual({ id: "lifecycle.inspect", title: "inspect", measure: "ratio to empty Bun", previous: 2, current: 2.5, worse: 0.25, flagged: true });
    expect(row(worse, "throughput.pipes")?.flagged).toBe(false);
    expect(row(compareRuns(previous, readBenchRun(results(11.5, 5, 900))), "lifecycle.inspect")?.flagged).toBe(false);
  });

  test("a higher-is-better figure that fell by more than 20 % is flagged; one that rose is better", () => {
    const previous = readBenchRun(results(10, 5, 1000));
    expect(row(compareRuns(previous, readBenchRun(results(10, 5, 750))), "throughput.pipes")).toMatchObject({ worse: 0.25, flagged: true });
    expect(row(compareRuns(previous, readBenchRun(results(10, 5, 1500))), "throughput.pipes")).toMatchObject({ worse: -0.5, flagged: false });
  });

  test("the ratio to the same run's baseline is what counts: a slower machine alone flags nothing", () => {
    // Everything 50 % slower, inspect and its baseline alike.
    const c = compareRuns(readBenchRun(results(10, 5, 900)), readBenchRun(results(15, 7.5, 900)));
    expect(row(c, "lifecycle.inspect")).toMatchObject({ measure: "ratio to empty Bun", worse: 0, flagged: false });
  });

  test("without the same baseline the values are compared, in the figure's unit", () => {
    const previous = readBenchRun(results(10, 5, 900));
    const current = results(13, 5, 900);
    (current.figures[0]!.baseline as { label: string }).label = "renamed baseline";
    expect(row(compareRuns(previous, readBenchRun(current)), "lifecycle.inspect")).toMatchObject({ measure: "ms", previous: 10, current: 13, flagged: true });
  });

  test("skipped figures and figures measured by one run only are not compared, but listed", () => {
    const gone = figure({ id: "exec.rss", family: "exec", title: "wrapper RSS", unit: "MiB", better: "lower", value: 30, baseline: { label: "empty Bun", value: 13 } });
    const fresh = figure({ id: "signals.pty", family: "signals", title: "signal, PTY", unit: "µs", better: "lower", value: 100, baseline: { label: "direct", value: 50 } });
    const off = skipped({ id: "lifecycle.peer", family: "lifecycle", title: "peer", unit: "ms", better: "lower", reason: "PASEO_BENCH_PEER not set" });
    const c = compareRuns(readBenchRun(results(10, 5, 900, [gone, off])), readBenchRun(results(10, 5, 900, [fresh, off])));
    expect(c.rows.map((r) => r.id)).toEqual(["lifecycle.inspect", "throughput.pipes"]);
    expect(c.onlyPrevious).toEqual(["exec.rss"]);
    expect(c.onlyCurrent).toEqual(["signals.pty"]);
  });

  test("runs on different runner classes, or a quick run against a full one, are not compared", () => {
    const previous = readBenchRun(results(10, 5, 900, [], { runnerClass: "ubuntu-24.04 (GitHub-hosted, 2 cores)" }));
    const other = compareRuns(previous, readBenchRun(results(30, 5, 100, [], { runnerClass: "ubuntu-24.04 (GitHub-hosted, 4 cores)" })));
    expect(other.notCompared).toBe("the previous run was on another runner class (ubuntu-24.04 (GitHub-hosted, 2 cores); this one: ubuntu-24.04 (GitHub-hosted, 4 cores))");
    expect(other.rows).toEqual([]);
    // Without a recorded class, platform, cores and CPU stand for it.
    expect(readBenchRun(results(10, 5, 900)).runnerClass).toBe("linux-x64, 4 cores, AMD EPYC 7763 64-Core Processor");
    expect(compareRuns(readBenchRun(results(10, 5, 900)), readBenchRun(results(10, 5, 900, [], { mode: "full" }))).notCompared).toBe("the previous run was a quick run, this one full");
  });
});

describe("the release-notes section", () => {
  test("flagged figures come first, marked, with the count", () => {
    const current = readBenchRun(results(13, 5, 900));
    const text = renderComparison(compareRuns(readBenchRun(results(10, 5, 900)), current), "v0.1.0", current.runnerClass);
    expect(text).toStartWith("## Benchmarks compared with v0.1.0\n\nSame runner class (linux-x64, 4 cores, AMD EPYC 7763 64-Core Processor). **1 of 2 figures are more than 20 % worse** (⚠).\n");
    expect(text).toContain("| figure | measure | v0.1.0 | this release | change |\n|---|---|---|---|---|\n| ⚠ inspect | ratio to empty Bun | 2.00 | 2.60 | 30 % worse |\n| pipes throughput | ratio to direct | 0.900 | 0.900 | same |\n");
    const calm = renderComparison(compareRuns(readBenchRun(results(10, 5, 900)), readBenchRun(results(10, 5, 900))), "v0.1.0", "x");
    expect(calm).toContain("No figure is more than 20 % worse (2 compared).");
  });

  let scratch: Scratch;
  let dir: string;
  beforeAll(() => {
    scratch = tempDir("phr-bench-compare-");
    dir = scratch.path;
  });
  afterAll(() => scratch.cleanup());

  const cli = (...args: string[]) => {
    const proc = Bun.spawnSync([process.execPath, join(import.meta.dir, "..", "release", "bench-compare.ts"), ...args]);
    return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
  };

  test("the command reads two files and prints the section; a missing previous file is noted, a bad command line exits 2", () => {
    writeFileSync(join(dir, "previous.json"), JSON.stringify(results(10, 5, 900)));
    writeFileSync(join(dir, "current.json"), JSON.stringify(results(10, 5, 600)));
    const run = cli("--previous", join(dir, "previous.json"), "--current", join(dir, "current.json"), "--previous-name", "v0.1.0");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("| ⚠ pipes throughput | ratio to direct | 0.900 | 0.600 | 33 % worse |");
    const first = cli("--previous", join(dir, "none.json"), "--current", join(dir, "current.json"), "--previous-name", "v0.1.0");
    expect(first.code).toBe(0);
    expect(first.stdout).toBe("## Benchmarks compared with v0.1.0\n\nNot compared: v0.1.0 has no bench-results.json.\n\n");
    expect(cli("--current", join(dir, "current.json")).code).toBe(2);
    expect(cli("--previous", "a", "--frob", "b").code).toBe(2);
  });
});

describe("the per-click figures (issue 33)", () => {
  const click = (ms: number, direct: number, met = true) =>
    figure({ id: "click.file-read", family: "click", title: "open a file", unit: "ms", better: "lower", value: ms, baseline: { label: "the same calls, direct", value: direct }, aim: { text: "≤ 1.5× direct", check: () => met } });
  const off = skipped({ id: "click.file-read.sandboxed", family: "click", title: "open a file, sandboxed", unit: "ms", better: "lower", reason: "bwrap not on PATH", aim: "≤ 2× direct" });

  test("get a table of their own, with this run's ratio, the previous one and the aim's verdict", () => {
    const current = readBenchRun(results(10, 5, 900, [click(150, 50, false), off]));
    const c = compareRuns(readBenchRun(results(10, 5, 900, [click(120, 60)])), current);
    expect(c.clicks).toEqual([{ id: "click.file-read", title: "open a file", ratio: 3, previous: 2, aim: { text: "≤ 1.5× direct", met: false } }]);
    const text = renderComparison(c, "v0.1.0", current.runnerClass);
    expect(text).toContain("### Per click: the daemon's calls against the same calls run directly\n\n| click | this release | v0.1.0 | aim |\n|---|---|---|---|\n| open a file | 3.00× | 2.00× | ≤ 1.5× direct: **not met** |\n");
    // The per-click figure is also one of the compared rows (50 % worse here).
    expect(c.rows.find((r) => r.id === "click.file-read")).toMatchObject({ previous: 2, current: 3, flagged: true });
  });

  test("are reported when the runs are not comparable, or there is no previous run, without a previous ratio", () => {
    const current = readBenchRun(results(10, 5, 900, [click(100, 50)], { runnerClass: "other" }));
    const c = compareRuns(readBenchRun(results(10, 5, 900, [click(120, 60)])), current);
    expect(c.notCompared).not.toBeNull();
    expect(c.clicks).toEqual([{ id: "click.file-read", title: "open a file", ratio: 2, previous: null, aim: { text: "≤ 1.5× direct", met: true } }]);
    expect(renderComparison(c, "v0.1.0", "other")).toContain("| open a file | 2.00× | — | ≤ 1.5× direct: met |");
  });

  test("the command prints them for a first release too", () => {
    const scratch = tempDir("phr-bench-click-");
    try {
      writeFileSync(join(scratch.path, "current.json"), JSON.stringify(results(10, 5, 900, [click(100, 50)])));
      const proc = Bun.spawnSync([process.execPath, join(import.meta.dir, "..", "release", "bench-compare.ts"), "--previous", join(scratch.path, "none.json"), "--current", join(scratch.path, "current.json"), "--previous-name", "v0.1.0"]);
      expect(proc.exitCode).toBe(0);
      expect(proc.stdout.toString()).toContain("Not compared: v0.1.0 has no bench-results.json.\n\n### Per click");
      expect(proc.stdout.toString()).toContain("| open a file | 2.00× | — | ≤ 1.5× direct: met |");
    } finally {
      scratch.cleanup();
    }
  });
});
