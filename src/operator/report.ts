/**
 * A list of checks as people read it (doctor, remote doctor, config check): one line per check with a mark,
 * then what to do. Marks fall back to ASCII words when the locale is not UTF-8, and colour is
 * used only on a terminal without NO_COLOR.
 */
import { isTerminal } from "../platform/tty.ts";
import { printable } from "../printable.ts";

/** ok / fail: a required check; warn: works, but worth a look; info: informational only; skip: not checked. */
export type CheckStatus = "ok" | "fail" | "warn" | "info" | "skip";

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do about a fail or warn: a command line safe to paste, or a sentence made a `#` comment by inWords(). */
  hint?: string;
  /** Other ways to fix it, shown as `or:` lines after the hint. */
  alternatives?: string[];
}

const UNICODE_MARKS: Record<CheckStatus, string> = { ok: "✓", fail: "✗", warn: "!", info: "·", skip: "-" };
const ASCII_MARKS: Record<CheckStatus, string> = { ok: "ok  ", fail: "FAIL", warn: "warn", info: "info", skip: "skip" };
const COLORS: Record<CheckStatus, string> = { ok: "32", fail: "31", warn: "33", info: "2", skip: "2" };

/** Whether the locale's character set is UTF-8 (LC_ALL, else LC_CTYPE, else LANG; none set is the C locale). */
function unicodeLocale(env: NodeJS.ProcessEnv = process.env): boolean {
  const locale = env.LC_ALL || env.LC_CTYPE || env.LANG || "";
  return /utf-?8/i.test(locale);
}

/** Whether output on `fd` may carry ANSI colour: a terminal, NO_COLOR unset or empty (no-color.org), TERM not "dumb". */
function colorEnabled(fd: number, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR) return false;
  if (env.TERM === "dumb") return false;
  return isTerminal(fd);
}

/** Text styling for one output descriptor; plain text when colour is off. */
export function styler(fd: number, env: NodeJS.ProcessEnv = process.env) {
  const on = colorEnabled(fd, env);
  const wrap = (code: string) => (text: string) => (on ? `\x1b[${code}m${text}\x1b[0m` : text);
  return { bold: wrap("1"), color: (code: string, text: string) => wrap(code)(text) };
}

/** The mark of a status, for stdout. */
function markOf(status: CheckStatus): string {
  const mark = (unicodeLocale() ? UNICODE_MARKS : ASCII_MARKS)[status];
  return styler(1).color(COLORS[status], mark);
}

/**
 * The lines of `checks` (with `quiet`, only failures and warnings), names padded to one column.
 * Every field is printable: a detail may quote a path, or a remote host's own report.
 */
export function renderChecks(given: readonly Check[], quiet = false, indent = ""): string[] {
  const checks = given.map(printableCheck);
  const width = Math.max(0, ...checks.map((check) => check.name.length));
  const markWidth = unicodeLocale() ? 1 : 4;
  const pad = `${indent}${" ".repeat(markWidth + 1 + width)}  `;
  const lines: string[] = [];
  for (const check of checks) {
    if (quiet && check.status !== "fail" && check.status !== "warn") continue;
    lines.push(`${indent}${markOf(check.status)} ${check.name.padEnd(width)}  ${check.detail}`.trimEnd());
    if (check.status !== "fail" && check.status !== "warn") continue;
    if (check.hint) lines.push(`${pad}fix: ${check.hint}`);
    for (const other of check.alternatives ?? []) lines.push(`${pad} or: ${other}`);
  }
  return lines;
}

/**
 * A fix said in words, as a `#` comment: every `fix:` line is then safe to paste, a command
 * or nothing the shell runs.
 */
export function inWords(text: string): string {
  return text.startsWith("#") ? text : `# ${text}`;
}

/**
 * The last line of a doctor's report: which required checks failed, else that all passed (and
 * the warnings). Printable like renderChecks' lines: a name may be a remote host's.
 */
export function summaryLine(checks: readonly Check[]): string {
  const failed = checks.filter((check) => check.status === "fail");
  if (failed.length) return `${failed.length} required check(s) failed: ${failed.map((check) => printable(check.name)).join(", ")}`;
  const warned = checks.filter((check) => check.status === "warn").length;
  return `all required checks passed${warned ? ` (${warned} warning(s))` : ""}`;
}

/** `check` with every field printable. */
function printableCheck(check: Check): Check {
  return {
    ...check,
    name: printable(check.name),
    detail: printable(check.detail),
    ...(check.hint === undefined ? {} : { hint: printable(check.hint) }),
    ...(check.alternatives === undefined ? {} : { alternatives: check.alternatives.map(printable) }),
  };
}
