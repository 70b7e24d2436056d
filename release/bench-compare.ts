#!/usr/bin/env bun
// `bun release/bench-compare.ts --previous FILE --current FILE [--previous-name vX.Y.Z] [--threshold 0.2]`
//   compares two `bench-results.json` files (bench/results/latest.json of `npm run bench`) and
//   prints a Markdown section for the release notes that flags every figure more than 20 %
//   worse than in the previous release. Runs on different runner classes are not compared.
//   A missing previous file (the first release) prints a note. Exit 0, or 2 on a bad command line.
import { existsSync, readFileSync } from "node:fs";

/** What this reads of one figure; older files may lack fields, so everything is checked. */
interface FigureFacts {
  id: string;
  title: string;
  unit: string;
  better: "higher" | "lower";
  value: number | null;
  ratio: number | null;
  baseline: string | null;
  /** The aim and whether this run met it (null: no verdict). */
  aim: { text: string; met: boolean | null } | null;
}

export interface BenchRun {
  /** Where it ran: `runnerClass` when the workflow recorded one, else platform, cores and CPU. */
  runnerClass: string;
  mode: string;
  figures: FigureFacts[];
}

export interface Row {
  id: string;
  title: string;
  /** `ratio to <baseline>` when both runs have one against the same baseline, else the unit. */
  measure: string;
  previous: number;
  current: number;
  /** How much worse, as a fraction (0.25 = 25 % worse); negative when better. */
  worse: number;
  flagged: boolean;
}

/** One per-click figure of this run (bench/click.ts, issue 33): what the daemon's user feels. */
export interface Click {
  id: string;
  title: string;
  /** Ours against the same calls run directly, this run and (when compared) the previous one. */
  ratio: number | null;
  previous: number | null;
  aim: FigureFacts["aim"];
}

export interface Comparison {
  /** Why the runs were not compared, or null when they were. */
  notCompared: string | null;
  /** This run's per-click figures, reported whether or not the runs were compared. */
  clicks: Click[];
  rows: Row[];
  onlyPrevious: string[];
  onlyCurrent: string[];
}

const finite = (x: unknown): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null);

function aimOf(raw: unknown): FigureFacts["aim"] {
  const aim = raw as { text?: unknown; met?: unknown } | null | undefined;
  if (typeof aim?.text !== "string") return null;
  return { text: aim.text, met: typeof aim.met === "boolean" ? aim.met : null };
}

/** Reads the parts of a bench results document the comparison needs. */
export function readBenchRun(json: unknown): BenchRun {
  const doc = (json ?? {}) as Record<string, unknown>;
  if (!Array.isArray(doc.figures)) throw new Error("not a bench results file: no figures array");
  const machine = (doc.machine ?? {}) as Record<string, unknown>;
  const runnerClass = typeof doc.runnerClass === "string" ? doc.runnerClass : `${machine.platform ?? "?"}, ${machine.cores ?? "?"} cores, ${machine.cpu ?? "?"}`;
  const figures: FigureFacts[] = [];
  for (const raw of doc.figures as Record<string, unknown>[]) {
    if (typeof raw?.id !== "string" || raw.skipped) continue;
    const baseline = raw.baseline as { label?: unknown } | null | undefined;
    figures.push({
      id: raw.id,
      title: typeof raw.title === "string" ? raw.title : raw.id,
      unit: typeof raw.unit === "string" ? raw.unit : "",
      better: raw.better === "higher" ? "higher" : "lower",
      value: finite(raw.value),
      ratio: finite(raw.ratio),
      baseline: typeof baseline?.label === "string" ? baseline.label : null,
      aim: aimOf(raw.aim),
    });
  }
  return { runnerClass, mode: typeof doc.mode === "string" ? doc.mode : "?", figures };
}

/**
 * One row per figure both runs measured. The ratio to the same run's baseline is compared when
 * both have one against the same baseline (it cancels a faster or slower machine), else the value.
 */
export function compareRuns(previous: BenchRun, current: BenchRun, threshold = 0.2): Comparison {
  const comparable = previous.runnerClass === current.runnerClass && previous.mode === current.mode;
  const empty = { rows: [], onlyPrevious: [], onlyCurrent: [], clicks: clicksOf(current, comparable ? previous : null) };
  if (previous.runnerClass !== current.runnerClass) {
    return { ...empty, notCompared: `the previous run was on another runner class (${previous.runnerClass}; this one: ${current.runnerClass})` };
  }
  if (previous.mode !== current.mode) return { ...empty, notCompared: `the previous run was a ${previous.mode} run, this one ${current.mode}` };
  const before = new Map(previous.figures.map((f) => [f.id, f]));
  const rows: Row[] = [];
  for (const now of current.figures) {
    const then = before.get(now.id);
    if (!then || then.better !== now.better) continue;
    const byRatio = then.ratio !== null && now.ratio !== null && then.baseline !== null && then.baseline === now.baseline;
    const [a, b] = byRatio ? [then.ratio, now.ratio] : then.unit === now.unit ? [then.value, now.value] : [null, null];
    if (a === null || b === null || a === 0) continue;
    const worse = now.better === "lower" ? (b - a) / a : (a - b) / a;
    rows.push({ id: now.id, title: now.title, measure: byRatio ? `ratio to ${now.baseline}` : now.unit, previous: a, current: b, worse, flagged: worse > threshold });
  }
  const ids = new Set(current.figures.map((f) => f.id));
  return {
    notCompared: null,
    clicks: empty.clicks,
    rows,
    onlyPrevious: previous.figures.filter((f) => !ids.has(f.id)).map((f) => f.id),
    onlyCurrent: current.figures.filter((f) => !before.has(f.id)).map((f) => f.id),
  };
}

/** The per-click figures of `current`, each with its ratio in `previous` (null: not compared, or not measured then). */
function clicksOf(current: BenchRun, previous: BenchRun | null): Click[] {
  const before = new Map((previous?.figures ?? []).map((f) => [f.id, f]));
  return current.figures
    .filter((f) => f.id.startsWith("click."))
    .map((f) => {
      const then = before.get(f.id);
      return { id: f.id, title: f.title, ratio: f.ratio, previous: then && then.baseline === f.baseline ? then.ratio : null, aim: f.aim };
    });
}

/** The per-click table: always shown when this run measured it, the aim's verdict beside it. */
function renderClicks(clicks: Click[], previousName: string): string[] {
  if (clicks.length === 0) return [];
  const ratio = (x: number | null) => (x === null ? "—" : `${number(x)}×`);
  const verdict = (aim: Click["aim"]) => (aim === null ? "" : `${aim.text}: ${aim.met === null ? "?" : aim.met ? "met" : "**not met**"}`);
  return [
    "### Per click: the daemon's calls against the same calls run directly",
    "",
    `| click | this release | ${previousName} | aim |`,
    "|---|---|---|---|",
    ...clicks.map((c) => `| ${c.title} | ${ratio(c.ratio)} | ${ratio(c.previous)} | ${verdict(c.aim)} |`),
    "",
  ];
}

const number = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toPrecision(3));

/** The release-notes section. */
export function renderComparison(c: Comparison, previousName: string, runnerClass: string, threshold = 0.2): string {
  const title = `## Benchmarks compared with ${previousName}`;
  const clicks = renderClicks(c.clicks, previousName);
  if (c.notCompared) return `${title}\n\nNot compared: ${c.notCompared}.\n${clicks.length ? `\n${clicks.join("\n")}` : ""}`;
  const percent = Math.round(threshold * 100);
  const flagged = c.rows.filter((r) => r.flagged);
  const rows = [...flagged, ...c.rows.filter((r) => !r.flagged)].map((r) => {
    const points = Math.round(r.worse * 100);
    const change = points === 0 ? "same" : `${Math.abs(points)} % ${points > 0 ? "worse" : "better"}`;
    return `| ${r.flagged ? "⚠ " : ""}${r.title} | ${r.measure} | ${number(r.previous)} | ${number(r.current)} | ${change} |`;
  });
  return [
    title,
    "",
    `Same runner class (${runnerClass}). ${flagged.length ? `**${flagged.length} of ${c.rows.length} figures are more than ${percent} % worse** (⚠).` : `No figure is more than ${percent} % worse (${c.rows.length} compared).`}`,
    "Compared: the ratio to the same run's baseline where both runs have one, else the value.",
    "",
    ...clicks,
    `| figure | measure | ${previousName} | this release | change |`,
    "|---|---|---|---|---|",
    ...rows,
    "",
    ...(c.onlyCurrent.length ? [`New figures: ${c.onlyCurrent.join(", ")}.`] : []),
    ...(c.onlyPrevious.length ? [`No longer measured: ${c.onlyPrevious.join(", ")}.`] : []),
  ].join("\n");
}

function main(argv: string[]): number {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const [name, value] = [argv[i]!, argv[i + 1]];
    if (!["--previous", "--current", "--previous-name", "--threshold"].includes(name) || value === undefined) {
      console.error(`bench-compare: bad argument ${JSON.stringify(name)}\nusage: bench-compare.ts --previous FILE --current FILE [--previous-name NAME] [--threshold 0.2]`);
      return 2;
    }
    args.set(name, value);
  }
  const threshold = Number(args.get("--threshold") ?? "0.2");
  if (!args.has("--previous") || !args.has("--current") || !(threshold > 0)) {
    console.error("bench-compare: --previous FILE and --current FILE are required; --threshold is a fraction above 0");
    return 2;
  }
  const previousName = args.get("--previous-name") ?? "the previous release";
  const current = readBenchRun(JSON.parse(readFileSync(args.get("--current")!, "utf8")));
  if (!existsSync(args.get("--previous")!)) {
    const first: Comparison = { notCompared: `${previousName} has no bench-results.json`, clicks: clicksOf(current, null), rows: [], onlyPrevious: [], onlyCurrent: [] };
    console.log(renderComparison(first, previousName, current.runnerClass, threshold));
    return 0;
  }
  const previous = readBenchRun(JSON.parse(readFileSync(args.get("--previous")!, "utf8")));
  console.log(renderComparison(compareRuns(previous, current, threshold), previousName, current.runnerClass, threshold));
  return 0;
}

if (import.meta.main) process.exit(main(process.argv.slice(2)));
