/**
 * The bench's own plumbing, kept honest without timing anything: the parser figure family runs
 * with tiny counts and produces well-formed figures, the table renders them, and latest.json
 * round-trips. No assertion here looks at a duration or a rate (machines are noisy).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parserFigures, randomChunks } from "../../bench/parser.ts";
import { figure, renderTable, skipped, writeResults, type Figure } from "../../bench/report.ts";
import { percentile, summarize } from "../../bench/stats.ts";
import { clickFigure } from "../../bench/click.ts";
import { phasesOf, renderBreakdown, summarizePhases } from "../../bench/breakdown.ts";
import { tempDir } from "../../kit/scratch.ts";

const scratch = tempDir("phr-bench-test-");
const dir = scratch.path;
afterAll(() => scratch.cleanup());

describe("bench plumbing", () => {
  test("random chunks cover the buffer exactly, within 1–4096 bytes, the same way every time", () => {
    const buffer = new Uint8Array(50_000).map((_, i) => i % 251);
    const chunks = randomChunks(buffer, 42);
    expect(chunks.every((c) => c.length >= 1 && c.length <= 4096)).toBe(true);
    expect(Buffer.concat(chunks)).toEqual(Buffer.from(buffer));
    expect(randomChunks(buffer, 42).map((c) => c.length)).toEqual(chunks.map((c) => c.length));
  });

  test("percentiles are nearest-rank", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(summarize([3, 1, 2])).toMatchObject({ n: 3, min: 1, p50: 2, max: 3 });
  });

  test("a figure carries value, baseline, ratio and the aim's verdict", () => {
    const f = figure({ id: "x.y", family: "parser", title: "t", unit: "frames/s", better: "higher", value: 2, baseline: { label: "b", value: 4 }, aim: { text: "≥ 0.5×", check: ({ ratio }) => ratio >= 0.5 } });
    expect(f.ratio).toBe(0.5);
    expect(f.aim).toEqual({ text: "≥ 0.5×", met: true });
    const s = skipped({ id: "x.z", family: "throughput", title: "t2", unit: "MiB/s", better: "higher", reason: "no script(1)" });
    expect(s).toMatchObject({ value: null, ratio: null, skipped: "no script(1)" });
  });

  test("the parser family, with tiny counts, yields well-formed figures, a table and JSON", async () => {
    const figures: Figure[] = await parserFigures({ frames: 200, minCpuMs: 2, rounds: 1 });
    expect(figures.map((f) => f.id)).toEqual([
      "parser.control.whole",
      "parser.control.chunks",
      "parser.event.whole",
      "parser.event.chunks",
      "parser.encoder.event",
    ]);
    for (const f of figures) {
      expect(f.family).toBe("parser");
      expect(f.unit).toBe("frames/s");
      expect(f.value).toBeGreaterThan(0);
      expect(f.baseline?.value).toBeGreaterThan(0);
      expect(f.ratio).toBeCloseTo(f.value! / f.baseline!.value!, 10);
    }
    const table = renderTable(figures);
    expect(table).toContain("1. Frame parser and encoder");
    expect(table).toContain("fd 3 controls, one buffer");
    const path = join(dir, "results", "latest.json");
    writeResults(path, { schema: 1, figures });
    const back = JSON.parse(readFileSync(path, "utf8"));
    expect(back.figures).toHaveLength(5);
    expect(Object.keys(back.figures[0])).toEqual(expect.arrayContaining(["id", "family", "title", "unit", "better", "value", "baseline", "ratio", "aim"]));
  });

  test("a per-click figure: ours against the direct calls, the inspect's share, the aim for a file read only", () => {
    const ours = [
      { ms: 90, inspectMs: 20 },
      { ms: 100, inspectMs: 22 },
      { ms: 110, inspectMs: 24 },
    ];
    const plain = clickFigure("file-read", false, ours, [40, 50, 60]);
    expect(plain).toMatchObject({ id: "click.file-read", family: "click", value: 100, baseline: { label: "the same calls, direct", value: 50 }, ratio: 2, aim: { text: "≤ 1.5× direct", met: false } });
    expect(plain.detail).toStartWith("adds 50.0 ms (p50), of which inspect 22.0 ms;");
    expect(clickFigure("file-read", true, ours, [40, 50, 60]).aim).toEqual({ text: "≤ 2× direct", met: true });
    expect(clickFigure("agent", false, ours, [1, 1, 1]).aim).toBeNull();
    expect(renderTable([plain])).toMatch(/9\. Per click[\s\S]*open a file: inspect \+ helper stat, read, stat\s+100 ms\s+50\.00 ms\s+the same calls, direct\s+2\.00×\s+≤ 1\.5× direct\s+FAR/);
  });

  test("the breakdown: each phase from the previous mark, the first from spawn, the last to the caller's end; medians in order", () => {
    const run = (offset: number) => ({ spawnedAt: 1000 + offset, endedAt: 1040 + offset, marks: [["evaluated", 1008 + offset], ["main", 1010 + offset], ["exiting", 1036 + offset]] as [string, number][] });
    expect(phasesOf(run(0))).toEqual([
      ["process start (exec, Bun, first modules)", 8],
      ["main", 2],
      ["exiting", 26],
      ["process exit (seen by the caller)", 4],
    ]);
    const slow = { spawnedAt: 0, endedAt: 100, marks: [["evaluated", 20], ["main", 30], ["exiting", 90]] as [string, number][] };
    const summary = summarizePhases("inspect", [run(0), run(5), slow]);
    expect(summary).toEqual({ call: "inspect", trials: 3, wallMs: 40, phases: [["process start (exec, Bun, first modules)", 8], ["main", 2], ["exiting", 26], ["process exit (seen by the caller)", 4]] });
    const text = renderBreakdown([summary], "bwrap not on PATH");
    expect(text).toContain("  inspect: wall 40.0 ms over 3 trials\n");
    expect(text).toMatch(/ {4}main +2\.00 ms +5 %\n/);
    expect(text).toEndWith("  sandboxed exec: skipped: bwrap not on PATH");
  });
});
