/**
 * What the operator commands share: the daemon's `options` their flags stand for (the flags'
 * documentation is flags.ts), running this same binary for a protocol operation, plain text.
 * Operator commands are for people; none of this is part of the protocol.
 */
import { lazyChildProcess } from "../platform/lazy.ts";
import { existsSync } from "node:fs";
import { UsageError, type Invocation } from "../argv.ts";
import { diagnose } from "../output.ts";
import { LifecycleResponse, parseMessage, type Dialect } from "../protocol/index.ts";
import { openExistingStore as openStoreIfPresent, type Store } from "../store/db.ts";
import { resolveHome } from "../store/home.ts";
import { getWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { readOptions } from "../options.ts";
import { isolationProblem, requestedIsolation } from "../workspace/isolation.ts";
import { DaemonConfigError, argv0Of, ourRuntimes, readDaemonConfig } from "./daemon-config.ts";
import { selfCommand, selfEnv } from "../client/self.ts";
import { shellQuote } from "../shell-quote.ts";
import { printable, terminalJson } from "../printable.ts";
import { parseJsonText } from "../protocol/json-text.ts";

/**
 * The argv[0] the daemon runs this binary with, when `--config` named its runtime: protocol
 * operations are run with it, so the configuration fingerprint they record and scope reconcile
 * by (workspace/owner.ts configurationOf) is the daemon's own.
 */
let daemonArgv0: string | undefined;

/** The argv[0] a protocol operation of this invocation runs with (see daemonArgv0). */
export function operationArgv0(): string {
  return daemonArgv0 ?? selfCommand()[0]!;
}

/**
 * The daemon `options` the flags stand for: `--options-json` or `--config`'s runtime first,
 * then `--home` → stateDirectory, `--owner` → owner over it. Throws UsageError.
 */
export function operatorOptions(invocation: Invocation): Record<string, unknown> {
  const options = baseOptions(invocation);
  const home = invocation.flags.get("home");
  if (home !== undefined) options.stateDirectory = home;
  const owner = invocation.flags.get("owner");
  if (owner !== undefined) options.owner = owner;
  return options;
}

function baseOptions(invocation: Invocation): Record<string, unknown> {
  const inline = invocation.flags.get("options-json");
  const file = invocation.flags.get("config");
  const runtime = invocation.flags.get("runtime");
  const command = invocation.command;
  if (inline !== undefined && file !== undefined) throw new UsageError("give either --options-json or --config, not both", command);
  if (runtime !== undefined && file === undefined) throw new UsageError("--runtime goes with --config FILE", command);
  if (inline !== undefined) return parseJsonText(inline) as Record<string, unknown>;
  if (file === undefined) return {};
  let config;
  try {
    config = readDaemonConfig(file);
  } catch (error) {
    if (error instanceof DaemonConfigError) throw new UsageError(`--config: ${error.message}`, command);
    throw error;
  }
  const candidates = runtime === undefined ? ourRuntimes(config) : config.runtimes.filter((entry) => entry.name === runtime);
  const names = config.runtimes.map((entry) => JSON.stringify(entry.name)).join(", ") || "none";
  if (candidates.length === 0) {
    const what = runtime === undefined ? "no runtime there runs paseo-host-runtime" : `it has no command runtime ${JSON.stringify(runtime)}`;
    throw new UsageError(`--config ${config.path}: ${what} (command runtimes: ${names})`, command);
  }
  if (candidates.length > 1) throw new UsageError(`--config ${config.path}: several runtimes run paseo-host-runtime (${candidates.map((entry) => JSON.stringify(entry.name)).join(", ")}); pick one with --runtime NAME`, command);
  const chosen = candidates[0]!;
  if (chosen.remote !== null) throw new UsageError(`--config: runtime ${JSON.stringify(chosen.name)} works on ${chosen.remote} (--remote): its options apply on that host, not here`, command);
  daemonArgv0 = argv0Of(chosen) ?? undefined;
  const options = chosen.options ?? {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw new UsageError(`--config: runtime ${JSON.stringify(chosen.name)} has options that are not an object`, command);
  return { ...(options as Record<string, unknown>) };
}

/**
 * The store of the home `options` select, opened only when it already exists: looking must
 * not create a runtime home. Returns null (and the home) when there is nothing yet.
 */
export function openExistingStore(options: Record<string, unknown>): { store: Store | null; home: string } {
  return { store: openStoreIfPresent(options), home: resolveHome(options) };
}

/**
 * For commands that only look (ls, ps): a home that does not exist is worth saying, since it
 * is most often a mistyped --home. Returns the message, or null when the home exists.
 */
export function missingHomeMessage(options: Record<string, unknown>): string | null {
  const home = resolveHome(options);
  if (existsSync(home)) return null;
  return `runtime home ${home} does not exist (nothing was ever created there; check --home, options.stateDirectory or PASEO_HOST_RUNTIME_HOME)`;
}

/** What a lifecycle operation of this binary printed, and how it ended. */
interface OperationResult {
  status: number;
  stdout: string;
  /** Its stderr, when captured ("" otherwise). */
  stderr: string;
}

interface OperationOptions {
  timeoutMs?: number;
  /** inherit (default): its diagnostics reach the human unchanged; capture: returned; ignore. */
  stderr?: "inherit" | "capture" | "ignore";
}

/** Runs `paseo-host-runtime <args>` with `request` on stdin, as the daemon would. */
export function runOperation(args: string[], request: unknown, { timeoutMs, stderr = "inherit" }: OperationOptions = {}): OperationResult {
  const [program, ...prefix] = selfCommand();
  const { spawnSync } = lazyChildProcess();
  const result = spawnSync(program!, [...prefix, ...args], {
    argv0: operationArgv0(),
    input: `${JSON.stringify(request)}\n`,
    stdio: ["pipe", "pipe", stderr === "capture" ? "pipe" : stderr],
    env: selfEnv(),
    maxBuffer: 16 * 1024 * 1024,
    timeout: timeoutMs,
    killSignal: "SIGKILL",
  });
  if (result.error && !result.signal) throw new Error(`cannot run ${args[0]}: ${result.error.message}`);
  const captured = result.stderr?.toString() ?? "";
  const killed = result.signal ? `${args[0]} was killed by ${result.signal}${timeoutMs === undefined ? "" : ` (limit ${timeoutMs} ms)`}` : "";
  if (killed && stderr === "inherit") diagnose(killed);
  const status = result.status ?? 128;
  return { status, stdout: result.stdout?.toString() ?? "", stderr: stderr === "capture" ? `${captured}${killed}` : "" };
}

/** The store's record of a workspace (any status), without creating a home to look. */
export function recordedWorkspace(options: Record<string, unknown>, workspaceId: string): WorkspaceRecord | null {
  const { store } = openExistingStore(options);
  if (!store) return null;
  try {
    return getWorkspace(store.db, workspaceId);
  } finally {
    store.db.close();
  }
}

/**
 * Operator commands follow the isolation a workspace keeps (workspace/isolation.ts): options
 * that ask for less than its record get the recorded isolation, network and paths instead, so
 * `run` or `workspace resume` without the daemon's options still confine it as created.
 */
export function withRecordedIsolation(options: Record<string, unknown>, record: WorkspaceRecord | null): Record<string, unknown> {
  const recorded = record?.isolation;
  if (!recorded || recorded.isolation === "none") return options;
  let asked;
  try {
    asked = requestedIsolation(readOptions(options));
  } catch {
    return options;
  }
  if (isolationProblem(record.workspaceId, recorded, asked) === null) return options;
  const { isolation, network, sandboxReadOnly, sandboxReadWrite } = recorded;
  return { ...options, isolation, network, sandboxReadOnly, sandboxReadWrite };
}

/**
 * The request fields that speak the dialect a workspace was created in (a later-dialect
 * workspace with its recorded instance id), so operator commands reach either kind.
 */
export function dialectFields(record: WorkspaceRecord | null): { dialect: Dialect; fields: { runtimeInstanceId?: string } } {
  if (record?.dialect === "later" && record.instanceId !== null) return { dialect: "later", fields: { runtimeInstanceId: record.instanceId } };
  return { dialect: "seed", fields: {} };
}

/**
 * Runs one lifecycle operation of this binary with `request` (its diagnostics reach the human)
 * and returns its response in `dialect`, or null when it failed (`command: op failed` is added).
 */
export function callOperation(command: string, args: string[], request: Record<string, unknown>, dialect: Dialect): LifecycleResponse | null {
  const result = runOperation(args, { protocolVersion: 1, ...request });
  if (result.status !== 0) {
    const at = args.indexOf("--workspace-id");
    const what = at === -1 ? args[0] : `${args[0]} of workspace ${JSON.stringify(args[at + 1])}`;
    diagnose(`${command}: ${what} failed (exit ${result.status}); see the reason above`);
    return null;
  }
  return parseMessage(LifecycleResponse[dialect], result.stdout, `${args[0]} response`) as LifecycleResponse;
}

/** One JSON document for scripts, safe on a terminal (terminalJson): a workload's bytes (its argv) cannot steer it. */
export function printJson(value: unknown): void {
  console.log(terminalJson(JSON.stringify(value, null, 2)));
}

/** Lines for a person, each one printable: a field's newline or escape sequence is shown, not obeyed. */
export function printLines(lines: readonly string[]): void {
  console.log(lines.map(printable).join("\n"));
}

/** Left-aligned columns separated by two spaces, every cell printable; the last column is not padded. */
export function formatTable(headers: readonly string[], cells: readonly (readonly string[])[]): string {
  const rows = cells.map((row) => row.map(printable));
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/** A duration as people say it: "40 s", "5 min", "3 h", "2 days". */
export function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 48 * 3600) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} days`;
}

/** Bytes in binary units: "812 KiB", "12.5 MiB". */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 || value >= 100 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

/** How operator commands quote a word for the shell (one home: src/shell-quote.ts). */
export { shellQuote };

/** An argv as one shell-readable line. */
export function quoteArgv(argv: readonly string[]): string {
  return argv.map(shellQuote).join(" ");
}
