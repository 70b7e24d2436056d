/**
 * What the operator commands share: the daemon's `options` their flags stand for (the flags'
 * documentation is flags.ts), running this same binary for a protocol operation, plain text.
 * Operator commands are for people; none of this is part of the protocol.
 */
import { lazyChildProcess } from "../platform/lazy.ts";
import { existsSync } from "node:fs";
import type { Invocation } from "../argv.ts";
import { diagnose, writeAll } from "../output.ts";
import { LifecycleResponse, parseMessage, type Dialect } from "../protocol/index.ts";
import { openExistingStore as openStoreIfPresent, type Store } from "../store/db.ts";
import { missingHomeText, resolveHome } from "../store/home.ts";
import { getWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { validOptions } from "../options.ts";
import { isolationProblem } from "../sandbox/isolation.ts";
import { requestedIsolation } from "../sandbox/settings.ts";
import { currentSelection, selection, selectionHint } from "./selection.ts";
import { selfCommand, selfEnv } from "../client/self.ts";
import { shellQuote } from "../shell-quote.ts";
import { printable, terminalJson } from "../printable.ts";

/** The argv[0] a protocol operation of this invocation runs with: the daemon's, when a config names the runtime. */
export function operationArgv0(): string {
  return currentSelection()?.argv0 ?? selfCommand()[0]!;
}

/**
 * The command a protocol operation of this invocation runs: this binary with the runtime's own
 * words before the operation (`--remote URL …` for a remote runtime), as the daemon runs it.
 */
export function operationCommand(): string[] {
  return [...selfCommand(), ...(currentSelection()?.globals ?? [])];
}

/**
 * The daemon `options` the flags stand for: `--options-json` or `--config`'s runtime first,
 * then `--home` → stateDirectory, `--owner` → owner over it. Throws UsageError.
 */
export function operatorOptions(invocation: Invocation): Record<string, unknown> {
  return { ...selection(invocation).options };
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
  return missingHomeText(home, selectionHint(currentSelection()));
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
  const [program, ...prefix] = operationCommand();
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

/**
 * runOperation for a long operation whose diagnostics a person reads as they come (git's
 * progress during a create): each line of its stderr passes through `rewrite` and on to ours
 * at once (a line ends at \n, or at \r as progress updates do).
 */
export async function streamOperation(args: string[], request: unknown, rewrite: (line: string) => string): Promise<Omit<OperationResult, "stderr">> {
  const proc = Bun.spawn([...operationCommand(), ...args], { argv0: operationArgv0(), stdin: "pipe", stdout: "pipe", stderr: "pipe", env: selfEnv() });
  proc.stdin.write(`${JSON.stringify(request)}\n`);
  await proc.stdin.end();
  const relay = (async () => {
    const decoder = new TextDecoder();
    let held = "";
    for await (const chunk of proc.stderr) {
      held += decoder.decode(chunk, { stream: true });
      const end = Math.max(held.lastIndexOf("\n"), held.lastIndexOf("\r")) + 1;
      // writeAll, not process.stderr: that would make fd 2 non-blocking for everyone who shares it (bun-platform-notes).
      if (end > 0) writeAll(2, held.slice(0, end).replace(/[^\n\r]+/g, rewrite));
      held = held.slice(end);
    }
    held += decoder.decode();
    if (held) writeAll(2, rewrite(held));
  })();
  const [stdout, status] = await Promise.all([new Response(proc.stdout).text(), proc.exited, relay]);
  return { status, stdout };
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
 * Operator commands follow the isolation a workspace keeps (sandbox/isolation.ts): options
 * that ask for less than its record get the recorded isolation, network and paths instead, so
 * `run` or `workspace resume` without the daemon's options still confine it as created.
 */
export function withRecordedIsolation(options: Record<string, unknown>, record: Pick<WorkspaceRecord, "workspaceId" | "isolation"> | null): Record<string, unknown> {
  const recorded = record?.isolation;
  if (!recorded || recorded.isolation === "none") return options;
  // Options that are not valid are the operation's to refuse, with its own words.
  const valid = validOptions(options);
  if (valid === null) return options;
  const asked = requestedIsolation(valid);
  if (isolationProblem(record.workspaceId, recorded, asked) === null) return options;
  return { ...options, ...recorded };
}

/**
 * The request fields that speak the dialect a workspace was created in (a later-dialect
 * workspace with its recorded instance id), so operator commands reach either kind.
 */
export function dialectFields(record: Pick<WorkspaceRecord, "dialect" | "instanceId"> | null): { dialect: Dialect; fields: { runtimeInstanceId?: string } } {
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

/**
 * A command line to suggest: `paseo-host-runtime [--remote …] <words>` with the flags of
 * `invocation` that select the runtime, its home and owner, so it reaches the same workspaces.
 */
export function suggestion(invocation: Invocation, words: string): string {
  const globals = invocation.globals;
  const before = globals ? ` --remote ${shellQuote(globals.remote!)}${globals.sshConfig === null ? "" : ` --ssh-config ${shellQuote(globals.sshConfig)}`}` : "";
  const after: string[] = [];
  for (const name of ["home", "owner", "config", "runtime", "options-json"]) {
    const value = invocation.flags.get(name);
    if (value !== undefined) after.push(` --${name} ${shellQuote(value)}`);
  }
  return `paseo-host-runtime${before} ${words}${after.join("")}`;
}

/** How operator commands quote a word for the shell (one home: src/shell-quote.ts). */
export { shellQuote };

/** An argv as one shell-readable line. */
export function quoteArgv(argv: readonly string[]): string {
  return argv.map(shellQuote).join(" ");
}
