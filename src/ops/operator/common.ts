/**
 * What the operator commands share: turning `--home`/`--owner` into the options the daemon
 * would send, running this same binary for a protocol operation, and plain-text tables.
 * Operator commands are for people; none of this is part of the protocol.
 */
import { lazyChildProcess } from "../../platform/lazy.ts";
import { resolve } from "node:path";
import { commandUsage, type Invocation } from "../../cli.ts";
import { diagnose, writeAll } from "../../output.ts";
import { openExistingStore as openStoreIfPresent, type Store } from "../../store/db.ts";
import { resolveHome } from "../../store/home.ts";

/** Options flags every store-touching operator command takes. */
export const STORE_FLAGS = ["home", "owner"] as const;

/** Flags of the commands that start or end executions: the daemon's containment options. */
export const CONTAINMENT_FLAGS = ["containment", "cgroup-root"] as const;

/**
 * The daemon `options` these flags stand for: `--home` → stateDirectory, `--owner` → owner,
 * `--containment` → containment, `--cgroup-root` → cgroupRoot.
 */
export function operatorOptions(invocation: Invocation): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  const home = invocation.flags.get("home");
  if (home !== undefined) options.stateDirectory = resolve(home);
  const owner = invocation.flags.get("owner");
  if (owner !== undefined) options.owner = owner;
  const containment = invocation.flags.get("containment");
  if (containment !== undefined) options.containment = containment;
  const cgroupRoot = invocation.flags.get("cgroup-root");
  if (cgroupRoot !== undefined) options.cgroupRoot = resolve(cgroupRoot);
  return options;
}

/** A usage error found after parsing: same shape as the CLI's (stderr, usage, exit 2). */
export function usageFailure(command: string, message: string): number {
  diagnose(message);
  writeAll(2, commandUsage(command));
  return 2;
}

/**
 * The store of the home `options` select, opened only when it already exists: looking must
 * not create a runtime home. Returns null (and the home) when there is nothing yet.
 */
export function openExistingStore(options: Record<string, unknown>): { store: Store | null; home: string } {
  return { store: openStoreIfPresent(options), home: resolveHome(options) };
}

/** argv that runs this same program: the compiled binary, or bun + the entry script from source. */
export function selfCommand(): string[] {
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  return compiled ? [process.execPath] : [process.execPath, Bun.main];
}

/**
 * The environment for a child run of this binary: ours, minus what would make the embedded
 * Bun behave differently (BUN_OPTIONS can preload code, BUN_BE_BUN turns it into plain bun).
 */
export function selfEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && key !== "BUN_OPTIONS" && key !== "BUN_BE_BUN") env[key] = value;
  }
  return env;
}

/** What a lifecycle operation of this binary printed, and how it ended. */
export interface OperationResult {
  status: number;
  stdout: string;
}

/**
 * Runs `paseo-host-runtime <args>` with `request` on stdin, as the daemon would. Its stderr
 * goes straight to ours, so its diagnostics reach the human unchanged (unless `quiet`).
 */
export function runOperation(args: string[], request: unknown, timeoutMs?: number, quiet = false): OperationResult {
  const [program, ...prefix] = selfCommand();
  const { spawnSync } = lazyChildProcess();
  const result = spawnSync(program!, [...prefix, ...args], {
    input: `${JSON.stringify(request)}\n`,
    stdio: ["pipe", "pipe", quiet ? "ignore" : "inherit"],
    env: selfEnv(),
    maxBuffer: 16 * 1024 * 1024,
    timeout: timeoutMs,
    killSignal: "SIGKILL",
  });
  if (result.error && !result.signal) throw new Error(`cannot run ${args[0]}: ${result.error.message}`);
  if (result.signal && !quiet) diagnose(`${args[0]} was killed by ${result.signal}`);
  const status = result.status ?? 128;
  return { status, stdout: result.stdout?.toString() ?? "" };
}

/** One JSON document for scripts. */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/** memory.current for a table: "12.3 MiB", or "-" when unknown. */
export function formatBytes(bytes: number | null): string {
  if (bytes === null) return "-";
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(0)} KiB` : `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** A timestamp (ms) as local `YYYY-MM-DD HH:MM:SS`. */
export function formatTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
