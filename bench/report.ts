/**
 * What every figure family returns, the printed table, and bench/results/latest.json.
 * A figure is always our number next to a baseline measured in the same run, plus the ratio,
 * so a noisy machine moves both and the ratio stays meaningful.
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem, type } from "node:os";
import { join } from "node:path";

export type Family = "parser" | "signals" | "exec" | "lifecycle" | "throughput" | "remote" | "containment" | "peer" | "click" | "breakdown" | "git" | "network";

/**
 * A process-level figure next to the two floors of a process, measured alternately with it in
 * the same run: the empty program compiled with the release flags (the floor of this stack,
 * bench/floor.ts) and `/bin/true` (the floor of any process). `ratio` = value / floor.
 */
export interface Floors {
  empty: { value: number; ratio: number };
  true: { label: string; value: number; ratio: number };
}

/** One measured figure. `ratio` = value / baseline.value (see `better` for which way is good). */
export interface Figure {
  id: string;
  family: Family;
  title: string;
  /** Unit of `value` and `baseline.value`. */
  unit: string;
  better: "higher" | "lower";
  value: number | null;
  baseline: { label: string; value: number | null } | null;
  ratio: number | null;
  /** The aim from issue 14 (or issue 7; null when the figure has none) and whether this run met it. */
  aim: { text: string; met: boolean | null } | null;
  /** For a process-level figure: the same figure against the empty program and /bin/true. */
  floors?: Floors;
  /** Short human detail for the table (percentiles, overhead…). */
  detail?: string;
  /** Everything else measured, for latest.json. */
  stats?: Record<string, unknown>;
  note?: string;
  /** Why the figure was not measured (then value and ratio are null). */
  skipped?: string;
}

export interface FigureInput {
  id: string;
  family: Family;
  title: string;
  unit: string;
  better: "higher" | "lower";
  value: number;
  baseline: { label: string; value: number };
  /** Computes whether the aim is met from the finished figure. */
  aim?: { text: string; check: (f: { value: number; baseline: number; ratio: number }) => boolean };
  /** The empty program's and /bin/true's figure (same statistic), for a process-level figure. */
  floors?: { empty: number; true: number; trueLabel: string };
  detail?: string;
  stats?: Record<string, unknown>;
  note?: string;
}

/** Builds a figure, computing the ratio and the aim verdict. */
export function figure(input: FigureInput): Figure {
  const ratio = input.baseline.value === 0 ? null : input.value / input.baseline.value;
  const checked = ratio === null ? null : input.aim?.check({ value: input.value, baseline: input.baseline.value, ratio }) ?? null;
  return {
    id: input.id,
    family: input.family,
    title: input.title,
    unit: input.unit,
    better: input.better,
    value: input.value,
    baseline: input.baseline,
    ratio,
    aim: input.aim ? { text: input.aim.text, met: checked } : null,
    ...(input.floors
      ? {
          floors: {
            empty: { value: input.floors.empty, ratio: input.value / input.floors.empty },
            true: { label: input.floors.trueLabel, value: input.floors.true, ratio: input.value / input.floors.true },
          },
        }
      : {}),
    detail: input.detail,
    stats: input.stats,
    note: input.note,
  };
}

/** A figure that could not be measured in this build or on this machine, with the reason. */
export function skipped(input: Pick<Figure, "id" | "family" | "title" | "unit" | "better"> & { reason: string; aim?: string }): Figure {
  return {
    ...input,
    value: null,
    baseline: null,
    ratio: null,
    aim: input.aim ? { text: input.aim, met: null } : null,
    skipped: input.reason,
  };
}

/** Formats a value in its unit for the table. */
export function formatValue(value: number | null, unit: string): string {
  if (value === null || Number.isNaN(value)) return "—";
  switch (unit) {
    case "frames/s":
      return value >= 1e6 ? `${(value / 1e6).toFixed(2)} M/s` : `${(value / 1e3).toFixed(1)} k/s`;
    case "ms":
      return value < 1 ? `${value.toFixed(3)} ms` : value < 100 ? `${value.toFixed(2)} ms` : `${value.toFixed(0)} ms`;
    case "µs":
      return `${value.toFixed(2)} µs`;
    case "MiB/s":
    case "MB/s":
      return `${value.toFixed(value < 100 ? 1 : 0)} ${unit}`;
    case "MiB":
      return `${value.toFixed(1)} MiB`;
    default:
      return `${value.toPrecision(3)} ${unit}`;
  }
}

function formatRatio(ratio: number | null): string {
  if (ratio === null) return "—";
  return `${ratio < 10 ? ratio.toFixed(2) : ratio.toFixed(1)}×`;
}

const FAMILY_TITLES: Record<Family, string> = {
  parser: "1. Frame parser and encoder (in process, mitata)",
  signals: "2. Signal-forwarding latency (kill → workload's handler)",
  exec: "3. exec overhead",
  lifecycle: "4. Lifecycle latency (wall time per process, p50)",
  throughput: "5. Throughput of the workload's stdout",
  remote: "6. --remote over OpenSSH on 127.0.0.1 (wall time, p50)",
  containment: "7. Containment: exec and crash cleanup per mode",
  peer: "8. Against a peer runtime (PASEO_BENCH_PEER)",
  breakdown: "10. Where each call's time goes (printed below the table)",
  click: "9. Per click: the daemon's calls, serialised, against the same calls run directly (p50)",
  git: "11. The sandbox's git bridge under a flood of refs (issue 30)",
  network: "12. The network allowlist: its cost per exec, throughput through its proxy (issue 32)",
};

/** The one readable table: one section per family, one row per figure, then the details. */
export function renderTable(figures: readonly Figure[]): string {
  const header = ["Figure", "Ours", "Baseline", "", "Ratio", "×empty", "×true", "Aim", ""];
  const right = new Set([1, 2, 4, 5, 6]);
  const rows: (string[] | string)[] = [];
  for (const family of Object.keys(FAMILY_TITLES) as Family[]) {
    const mine = figures.filter((f) => f.family === family);
    if (mine.length === 0) continue;
    rows.push(FAMILY_TITLES[family]);
    for (const f of mine) {
      if (f.skipped) {
        rows.push([`  ${f.title}`, "skipped", "", "", "", "", "", f.aim?.text ?? "", ""]);
        continue;
      }
      const verdict = f.aim === null ? "" : f.aim.met === null ? "?" : f.aim.met ? "ok" : "FAR";
      rows.push([
        `  ${f.title}`,
        formatValue(f.value, f.unit),
        f.baseline ? formatValue(f.baseline.value, f.unit) : "",
        f.baseline?.label ?? "",
        formatRatio(f.ratio),
        f.floors ? formatRatio(f.floors.empty.ratio) : "",
        f.floors ? formatRatio(f.floors.true.ratio) : "",
        f.aim?.text ?? "",
        verdict,
      ]);
    }
  }
  const cells = rows.filter((r): r is string[] => Array.isArray(r));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (row: string[]) => row.map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  const out = [line(header), widths.map((w) => "─".repeat(w)).join("  ")];
  for (const row of rows) out.push(typeof row === "string" ? `\n${row}` : line(row));
  const notes = figures.filter((f) => f.detail || f.note || f.skipped || f.floors);
  if (notes.length > 0) {
    out.push("", "Details:");
    for (const f of notes) {
      const floors = f.floors ? `floors (p50, alternated): empty program ${formatValue(f.floors.empty.value, f.unit)}, ${f.floors.true.label} ${formatValue(f.floors.true.value, f.unit)}` : "";
      const text = [f.skipped ? `skipped: ${f.skipped}` : "", f.detail ?? "", floors, f.note ?? ""].filter(Boolean).join("; ");
      out.push(`  ${f.id}: ${text}`);
    }
  }
  return out.join("\n");
}

/** Facts about the machine, the toolchain and the code measured. */
export function machineInfo(root: string, binary: string) {
  const git = (...args: string[]) => {
    const result = Bun.spawnSync(["git", ...args], { cwd: root, stderr: "ignore" });
    return result.exitCode === 0 ? result.stdout.toString().trim() : null;
  };
  const bin = existsSync(binary) ? statSync(binary) : null;
  const newestSource = newestMtime(join(root, "src"));
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${type()} ${release()}`,
    platform: `${process.platform}-${process.arch}`,
    bun: Bun.version,
    bunRevision: Bun.revision,
    loadAverageAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    /** Processes visible in /proc: the runtime's /proc sweeps cost time in proportion. */
    processCount: existsSync("/proc") ? readdirSync("/proc").filter((name) => /^\d+$/.test(name)).length : null,
    git: { revision: git("rev-parse", "HEAD"), dirty: (git("status", "--porcelain", "--", "src") ?? "") !== "" },
    binary: bin
      ? {
          path: binary,
          bytes: bin.size,
          builtAt: bin.mtime.toISOString(),
          olderThanSrc: newestSource !== null && bin.mtimeMs < newestSource,
        }
      : null,
  };
}

function newestMtime(dir: string): number | null {
  if (!existsSync(dir)) return null;
  let newest = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Writes the whole run to `path` (creating its directory). */
export function writeResults(path: string, results: unknown): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
}
