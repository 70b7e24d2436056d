/**
 * This process's runtime log: which operation it runs, the home whose log it writes, at what
 * level, and the strings that must never reach the file. One JSON object per line.
 *
 * What is never written: an env value or a lifecycleEnvironment value (replaced by
 * `[env NAME]` wherever one of 6 characters or more would appear), a URL's userinfo
 * (redactCredentials), any other option value (only option keys, at debug).
 * Logging never fails an operation: a log that cannot be written is reported once on stderr
 * (while stderr is still ours) and left alone for the rest of the process.
 */
import { diagnoseOnStderr, setDiagnosticLog } from "../output.ts";
import type { LogLevel, RuntimeOptions } from "../options.ts";
import { redactCredentials } from "../redact.ts";
import { HomeSettingError, resolveHome } from "../store/home.ts";
import { appendLine, ensureLogDirectory } from "./files.ts";

/** A line's level. `warn` lines are kept at logLevel `info` and `debug`. */
type LineLevel = "error" | "warn" | "info" | "debug";

const LINE_RANK: Record<LineLevel, number> = { error: 0, warn: 1, info: 1, debug: 2 };
const LEVEL_RANK: Record<LogLevel, number> = { error: 0, info: 1, debug: 2 };

/** Shorter values are not scrubbed: they cannot be told apart from ordinary words ("1", "true"). */
const MIN_SECRET_LENGTH = 6;
/** Bounds that keep one line well under one write (and a file under its bound). */
const MAX_STRING = 2048;
const MAX_ITEMS = 64;
const MAX_LINE_BYTES = 16 * 1024;

interface Destination {
  home: string;
  level: LogLevel;
  maxBytes: number;
  owner: string;
  /** `<home>/log` once made and checked. */
  directory?: string;
}

interface Scope {
  op: string;
  workspaceId?: string;
  execId?: string;
  /** The workload's pid once it was launched (exec). */
  workloadPid?: number;
  /** With `--remote`: the host(s) the operation went to, as ssh URLs without userinfo. */
  remote?: string | string[];
  destination: Destination | null;
  /** [value, replacement], longest first. */
  secrets: [string, string][];
  /** Set when the outcome was written or the log failed: nothing more is written. */
  closed: boolean;
  /** Lines rendered while the home did not exist yet (a first create makes it midway). */
  pending: Uint8Array[];
}

/** Lines kept while waiting for the home to exist; more is not worth holding. */
const MAX_PENDING = 32;

const scope: Scope = { op: "", destination: null, secrets: [], closed: false, pending: [] };

/** Names the operation this process runs, before anything is read. */
export function beginLog(op: string, ids: { workspaceId?: string; execId?: string }): void {
  scope.op = op;
  scope.workspaceId = ids.workspaceId;
  scope.execId = ids.execId;
}

/** The exec id, once the envelope told it. */
export function setLogExecId(execId: string): void {
  scope.execId = execId;
}

/** The workload's pid: every later line carries it (0, a workload on a `--remote` host, is none of ours). */
export function setLogWorkloadPid(pid: number): void {
  if (pid > 0) scope.workloadPid = pid;
}

/**
 * The `--remote` host(s) this call went to: every later line carries their URLs, userinfo
 * redacted. `logins` (`user@host`, as diagnostics and ssh's messages name a host) become
 * `***@host` in every later line too.
 */
export function setLogRemote(remote: string | readonly string[], logins: readonly string[] = []): void {
  scope.remote = typeof remote === "string" ? redactCredentials(remote) : remote.map(redactCredentials);
  const hidden = logins.map((login): [string, string] => [login, `***${login.slice(login.lastIndexOf("@"))}`]);
  scope.secrets = [...scope.secrets, ...hidden].sort((a, b) => b[0].length - a[0].length);
}

/**
 * Points the log at the home `options` select. `secrets` maps a label ("env PATH") to a value
 * that must not be written. Diagnostics from now on also go to the log.
 */
export function attachLog(options: RuntimeOptions, secrets: Record<string, string> = {}): void {
  let home: string;
  try {
    home = resolveHome(options);
  } catch (error) {
    if (error instanceof HomeSettingError) return; // The operation reports the same problem itself.
    throw error;
  }
  scope.destination = { home, level: options.logLevel, maxBytes: options.logMaxBytes, owner: options.owner };
  scope.secrets = Object.entries(secrets)
    .filter(([, value]) => value.length >= MIN_SECRET_LENGTH)
    .map(([label, value]): [string, string] => [value, `[${label}]`])
    .sort((a, b) => b[0].length - a[0].length);
  setDiagnosticLog((message) => logLine("warn", "diagnostic", { message }));
}

/** Labels for the entries of an env-like map: `{"env PATH": "/usr/bin"}`. */
export function secretValues(label: string, map: Record<string, string>): Record<string, string> {
  const labelled: Record<string, string> = {};
  for (const [name, value] of Object.entries(map)) labelled[`${label} ${name}`] = value;
  return labelled;
}

/** Whether the log knows its home (attachLog ran). */
export function logAttached(): boolean {
  return scope.destination !== null;
}

/** Whether a line of `level` would be written (to skip building debug-only fields). */
export function logs(level: LineLevel): boolean {
  const destination = scope.destination;
  return destination !== null && !scope.closed && LINE_RANK[level] <= LEVEL_RANK[destination.level];
}

/** Appends one line: `event` says what kind, `fields` the rest (strings are scrubbed). */
export function logLine(level: LineLevel, event: string, fields: Record<string, unknown> = {}): void {
  if (!logs(level)) return;
  const destination = scope.destination!;
  const line = render(level, event, fields);
  try {
    destination.directory ??= ensureLogDirectory(destination.home) ?? undefined;
    if (destination.directory === undefined) {
      if (scope.pending.length < MAX_PENDING) scope.pending.push(line);
      return;
    }
    for (const held of scope.pending.splice(0)) appendLine(destination.directory, held, destination.maxBytes);
    appendLine(destination.directory, line, destination.maxBytes);
  } catch (error) {
    scope.closed = true;
    setDiagnosticLog(undefined);
    diagnoseOnStderr(`warning: not writing the runtime log: ${(error as Error).message}`);
  }
}

/** The last line of this process (its outcome); later diagnostics go to stderr only. */
export function logOutcome(level: LineLevel, event: string, fields: Record<string, unknown>): void {
  logLine(level, event, fields);
  scope.closed = true;
  setDiagnosticLog(undefined);
}

function render(level: LineLevel, event: string, fields: Record<string, unknown>): Uint8Array {
  const base = {
    time: new Date().toISOString(),
    level,
    event,
    pid: process.pid,
    op: scope.op,
    owner: scope.destination?.owner,
    workspaceId: scope.workspaceId,
    execId: scope.execId,
    workloadPid: scope.workloadPid,
    remote: scope.remote,
  };
  // TextEncoder, not Buffer: Buffer's first use costs ~0.25 ms in a process that had none (exec).
  const encoder = new TextEncoder();
  const line = encoder.encode(`${JSON.stringify({ ...base, ...(clean(fields) as object) })}\n`);
  return line.length <= MAX_LINE_BYTES ? line : encoder.encode(`${JSON.stringify({ ...base, truncated: true })}\n`);
}

/** Strings scrubbed and clipped, long lists shortened, recursively. */
function clean(value: unknown): unknown {
  if (typeof value === "string") return clip(scrub(value));
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ITEMS).map(clean);
    if (value.length > MAX_ITEMS) items.push(`… ${value.length - MAX_ITEMS} more`);
    return items;
  }
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, clean(item)]));
  }
  return value;
}

function scrub(text: string): string {
  let result = text;
  for (const [value, replacement] of scope.secrets) {
    if (result.includes(value)) result = result.split(value).join(replacement);
  }
  return redactCredentials(result);
}

function clip(text: string): string {
  return text.length <= MAX_STRING ? text : `${text.slice(0, MAX_STRING)}… (${text.length - MAX_STRING} more characters)`;
}
