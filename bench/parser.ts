/**
 * Figure 1: the frame parser and the canonical encoder, in process, timed with mitata.
 *
 * Input: 10 000 mixed fd 3 control frames and 10 000 mixed fd 4 event frames, each stream
 * delivered whole and in seeded random chunks of 1–4096 bytes, through FrameDecoder with full
 * strict validation. Baseline, same input, same run: split on "\n" + JSON.parse, no validation
 * (a streaming TextDecoder for the chunked case). Encoder: encodeFrame vs JSON.stringify + "\n".
 * Each pair is measured in alternating rounds; the best median of each side is reported.
 */
import { do_not_optimize, measure } from "mitata";
import { Control, FrameDecoder, ProcessEvent, encodeFrame } from "../src/protocol/index.ts";
import { figure, type Figure } from "./report.ts";
import { seededRandom } from "./stats.ts";

export interface ParserOptions {
  /** Frames per stream (10 000 in the issue). */
  frames: number;
  /** mitata's minimum CPU time per measurement, in ms. */
  minCpuMs: number;
  /** Measurements of ours and of the baseline, alternated; the best median of each is kept. */
  rounds: number;
}

const HEX = "0123456789abcdef0123456789abcdef";

/** An env map the size the daemon really sends for an agent (~25 variables, ~1.3 KB). */
const AGENT_ENV: Record<string, string> = {
  PATH: "/home/dev/.local/bin:/usr/local/bin:/usr/bin:/bin",
  HOME: "/home/dev",
  USER: "dev",
  SHELL: "/bin/bash",
  LANG: "en_US.UTF-8",
  TERM: "xterm-256color",
  COLORTERM: "truecolor",
  EDITOR: "vim",
  PASEO_AGENT_ID: "agent-7f3c2a",
  PASEO_WORKSPACE_ID: "workspace-01",
  PASEO_BRANCH_NAME: "feature/frame-bench",
  GIT_AUTHOR_NAME: "Paseo Agent",
  GIT_AUTHOR_EMAIL: "agent@example.invalid",
  NODE_OPTIONS: "--max-old-space-size=4096",
  ANTHROPIC_API_KEY: "sk-ant-api03-" + "x".repeat(80),
  OPENAI_API_KEY: "sk-proj-" + "y".repeat(120),
  XDG_CONFIG_HOME: "/home/dev/.config",
  XDG_CACHE_HOME: "/home/dev/.cache",
  XDG_DATA_HOME: "/home/dev/.local/share",
  npm_config_cache: "/home/dev/.npm",
  LC_ALL: "en_US.UTF-8",
  TZ: "Europe/Paris",
  NO_COLOR: "",
  FORCE_COLOR: "1",
  PASEO_TERMINAL: "1",
};

/** Control frames with a weight each: per exec the daemon sends one envelope, PTYs then send resizes and signals. */
const CONTROL_TEMPLATES: [number, unknown][] = [
  [2, { type: "spawn", protocolVersion: 1, argv: ["/bin/sh", "-c", "printf hello"], cwd: "packages/app", env: { PATH: "/usr/bin:/bin" }, purpose: { kind: "workspace-script", script: "verify" }, options: {}, execId: HEX, stdio: { kind: "pipes" } }],
  [2, { type: "spawn", protocolVersion: 1, argv: ["paseo-workspace-helper", "describe"], env: {}, purpose: { kind: "workspace-helper" }, options: {}, execId: HEX, stdio: { kind: "pipes" } }],
  [1, { type: "spawn", protocolVersion: 1, argv: ["claude", "--output-format", "stream-json", "--verbose"], env: AGENT_ENV, purpose: { kind: "agent", agentId: "agent-7f3c2a", provider: "claude" }, options: { stateDirectory: "/var/lib/paseo/runtime", owner: "paseo" }, execId: HEX, stdio: { kind: "pipes" } }],
  [1, { type: "spawn", protocolVersion: 1, argv: ["/bin/bash", "-l"], env: AGENT_ENV, purpose: { kind: "terminal", terminalId: "term-3" }, options: {}, execId: HEX, stdio: { kind: "pty", rows: 24, cols: 80, term: "xterm-256color" } }],
  [6, { type: "resize", protocolVersion: 1, id: 17, rows: 40, cols: 120 }],
  [3, { type: "signal", protocolVersion: 1, signal: "SIGINT" }],
];

/** Event frames with a weight each: the shape of many short lifecycles, PTY resizes included. */
const EVENT_TEMPLATES: [number, unknown][] = [
  [3, { type: "started", protocolVersion: 1 }],
  [3, { type: "resized", protocolVersion: 1, id: 17 }],
  [3, { type: "eof", protocolVersion: 1 }],
  [2, { type: "exit", protocolVersion: 1, code: 0, signal: null }],
  [1, { type: "exit", protocolVersion: 1, code: null, signal: "SIGTERM" }],
  [1, { type: "error", protocolVersion: 1, message: "workload 4242 vanished before its identity could be read" }],
];

function pickFrames(templates: [number, unknown][], count: number, seed: number): unknown[] {
  const random = seededRandom(seed);
  const total = templates.reduce((sum, [w]) => sum + w, 0);
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) {
    let r = random() * total;
    const found = templates.find(([w]) => (r -= w) < 0) ?? templates[0]!;
    out.push(found[1]);
  }
  return out;
}

/** Cuts `buffer` into chunks of 1–4096 bytes (seeded, so every run cuts the same way). */
export function randomChunks(buffer: Uint8Array, seed: number, maxChunk = 4096): Uint8Array[] {
  const random = seededRandom(seed);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < buffer.length; ) {
    const size = 1 + Math.floor(random() * maxChunk);
    chunks.push(buffer.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

/** The project's decoder, with full strict validation. Returns the frame count. */
function decodeOurs<S extends typeof Control | typeof ProcessEvent>(schema: S, what: string, chunks: readonly Uint8Array[]): number {
  const decoder = new FrameDecoder(schema, what);
  let frames = 0;
  for (const chunk of chunks) frames += decoder.push(chunk).length;
  decoder.end();
  return frames;
}

/** Baseline: split on "\n" and JSON.parse each line, nothing validated. */
function decodeBare(chunks: readonly Uint8Array[]): number {
  const utf8 = new TextDecoder();
  let frames = 0;
  let pending = "";
  for (const chunk of chunks) {
    pending += utf8.decode(chunk, { stream: true });
    let start = 0;
    for (let nl = pending.indexOf("\n"); nl !== -1; nl = pending.indexOf("\n", start)) {
      do_not_optimize(JSON.parse(pending.slice(start, nl)));
      frames++;
      start = nl + 1;
    }
    pending = pending.slice(start);
  }
  return frames;
}

/** Baseline for a whole buffer: one decode, one split. */
function decodeBareWhole(buffer: Uint8Array): number {
  const lines = new TextDecoder().decode(buffer).split("\n");
  for (let i = 0; i < lines.length - 1; i++) do_not_optimize(JSON.parse(lines[i]!));
  return lines.length - 1;
}

interface Timing {
  p50: number;
  avg: number;
  p99: number;
  samples: number;
}

/** mitata's median time of one call to `fn`, in ms. */
async function timeMs(fn: () => unknown, minCpuMs: number): Promise<Timing> {
  const stats = await measure(() => do_not_optimize(fn()), { min_cpu_time: minCpuMs * 1e6, max_samples: 10_000 });
  return { p50: stats.p50 / 1e6, avg: stats.avg / 1e6, p99: stats.p99 / 1e6, samples: stats.samples.length };
}

/**
 * Times `ours` and `bare` in alternating rounds and keeps each one's best median: on a shared
 * machine another process can take a core for a whole measurement, which only ever slows it.
 */
async function compareTimes(ours: () => unknown, bare: () => unknown, options: ParserOptions) {
  const rounds = { ours: [] as Timing[], bare: [] as Timing[] };
  for (let i = 0; i < options.rounds; i++) {
    rounds.ours.push(await timeMs(ours, options.minCpuMs));
    rounds.bare.push(await timeMs(bare, options.minCpuMs));
  }
  const best = (list: Timing[]) => list.reduce((a, b) => (b.p50 < a.p50 ? b : a));
  return { ours: best(rounds.ours), bare: best(rounds.bare), rounds };
}

const PARSER_AIM = { text: "≥ 0.5× bare", check: ({ ratio }: { ratio: number }) => ratio >= 0.5 };

export async function parserFigures(options: ParserOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  const streams = [
    { key: "control", label: "fd 3 controls", schema: Control, what: "fd 3 control", frames: pickFrames(CONTROL_TEMPLATES, options.frames, 3) },
    { key: "event", label: "fd 4 events", schema: ProcessEvent, what: "fd 4 event", frames: pickFrames(EVENT_TEMPLATES, options.frames, 4) },
  ] as const;
  for (const stream of streams) {
    const buffer = new TextEncoder().encode(stream.frames.map((f) => `${JSON.stringify(f)}\n`).join(""));
    const chunked = randomChunks(buffer, 42);
    const whole = [buffer];
    const check = decodeOurs(stream.schema, stream.what, chunked);
    if (check !== stream.frames.length || decodeBare(chunked) !== check || decodeBareWhole(buffer) !== check) {
      throw new Error(`parser bench: ${stream.label} decoded to ${check} frames, expected ${stream.frames.length}`);
    }
    const mb = buffer.length / 1e6;
    for (const delivery of ["whole", "chunks"] as const) {
      const input = delivery === "whole" ? whole : chunked;
      const { ours, bare, rounds } = await compareTimes(
        () => decodeOurs(stream.schema, stream.what, input),
        () => (delivery === "whole" ? decodeBareWhole(buffer) : decodeBare(chunked)),
        options,
      );
      const rate = (ms: number) => stream.frames.length / (ms / 1000);
      figures.push(
        figure({
          id: `parser.${stream.key}.${delivery}`,
          family: "parser",
          title: `${stream.label}, ${delivery === "whole" ? "one buffer" : "chunks of 1–4096 B"}`,
          unit: "frames/s",
          better: "higher",
          value: rate(ours.p50),
          baseline: { label: "split + JSON.parse", value: rate(bare.p50) },
          aim: PARSER_AIM,
          detail: `${(mb / (ours.p50 / 1000)).toFixed(1)} MB/s vs ${(mb / (bare.p50 / 1000)).toFixed(1)} MB/s; ${stream.frames.length} frames, ${(buffer.length / stream.frames.length).toFixed(0)} B avg`,
          stats: {
            frames: stream.frames.length,
            bytes: buffer.length,
            chunks: input.length,
            oursMsPerPass: ours,
            baselineMsPerPass: bare,
            rounds,
            oursMBps: mb / (ours.p50 / 1000),
            baselineMBps: mb / (bare.p50 / 1000),
          },
        }),
      );
    }
  }
  const events = pickFrames(EVENT_TEMPLATES, options.frames, 5) as ProcessEvent[];
  const { ours, bare, rounds } = await compareTimes(
    () => {
      let bytes = 0;
      for (const event of events) bytes += encodeFrame(ProcessEvent, event, "process event").length;
      return bytes;
    },
    () => {
      let bytes = 0;
      for (const event of events) bytes += `${JSON.stringify(event)}\n`.length;
      return bytes;
    },
    options,
  );
  const rate = (ms: number) => events.length / (ms / 1000);
  figures.push(
    figure({
      id: "parser.encoder.event",
      family: "parser",
      title: "encodeFrame, fd 4 events",
      unit: "frames/s",
      better: "higher",
      value: rate(ours.p50),
      baseline: { label: "JSON.stringify + \\n", value: rate(bare.p50) },
      detail: `${events.length} events per pass, validated then serialized in schema order`,
      stats: { frames: events.length, oursMsPerPass: ours, baselineMsPerPass: bare, rounds },
    }),
  );
  return figures;
}
