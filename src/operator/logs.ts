/**
 * `logs [--workspace-id W] [--exec-id E] [--follow] [--json]`: the runtime log of a home, for
 * people (one readable line per entry) or scripts (the JSON lines as written).
 */
import { existsSync } from "node:fs";
import type { Invocation } from "../argv.ts";
import { diagnose, writeAll } from "../output.ts";
import { logDirectory } from "../log/files.ts";
import { hasErrno } from "../platform/errno.ts";
import { LogFollower, logExists } from "../log/reader.ts";
import { resolveHome } from "../store/home.ts";
import { unknownOptionText } from "../log/call-log.ts";
import { operatorOptions } from "./common.ts";
import { printable, terminalJson } from "../printable.ts";

/** How often `--follow` looks for new lines. */
const FOLLOW_INTERVAL_MS = 200;

type Entry = Record<string, unknown>;

interface Filter {
  workspaceId?: string;
  execId?: string;
  owner?: string;
}

export async function logs(invocation: Invocation): Promise<number> {
  const home = resolveHome(operatorOptions(invocation));
  const filter: Filter = { workspaceId: invocation.flags.get("workspace-id"), execId: invocation.flags.get("exec-id"), owner: invocation.flags.get("owner") };
  const json = invocation.switches.has("json");
  const follow = invocation.switches.has("follow");
  if (!existsSync(home)) {
    diagnose(`runtime home ${home} does not exist (give the daemon's stateDirectory with --home)`);
    return 1;
  }
  const directory = logDirectory(home);
  if (!logExists(directory)) {
    diagnose(`no runtime log in ${home} yet: ${directory}/runtime.log is written by lifecycle operations and exec${follow ? "; waiting for it" : ""}`);
    if (!follow) return 0;
  }
  const follower = new LogFollower(directory);
  const shown = { lines: 0, malformed: 0 };
  const print = (lines: string[]) => {
    const out = render(lines, filter, json, shown);
    if (out) writeAll(1, out);
  };
  try {
    if (logExists(directory)) print(follower.poll());
    if (!follow) {
      if (shown.malformed > 0) diagnose(`${shown.malformed} line(s) of the log are not JSON (cut short by a full disk?) and were skipped`);
      if (shown.lines === 0 && shown.malformed === 0 && hasFilter(filter)) diagnose(`no line of ${directory} matches`);
      return 0;
    }
    for (;;) {
      await Bun.sleep(FOLLOW_INTERVAL_MS);
      if (logExists(directory)) print(follower.poll());
      if (follower.missed) {
        diagnose("the log rotated past lines before they could be read");
        follower.missed = false;
      }
    }
  } catch (error) {
    // The reader went away (`logs --follow | head`): nothing more to show.
    if (hasErrno(error, ["EPIPE"])) return 0;
    throw error;
  }
}

function hasFilter(filter: Filter): boolean {
  return filter.workspaceId !== undefined || filter.execId !== undefined || filter.owner !== undefined;
}

function render(lines: string[], filter: Filter, json: boolean, shown: { lines: number; malformed: number }): string {
  let out = "";
  for (const line of lines) {
    const entry = parse(line);
    if (!entry) {
      shown.malformed++;
      continue;
    }
    if (!matches(entry, filter)) continue;
    shown.lines++;
    // Every field a writer chose (ids, messages, argv) is shown escaped, never obeyed by the terminal.
    out += json ? `${terminalJson(line)}\n` : `${printable(humanLine(entry))}\n`;
  }
  return out;
}

function parse(line: string): Entry | null {
  try {
    const value = JSON.parse(line);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

function matches(entry: Entry, filter: Filter): boolean {
  if (filter.workspaceId !== undefined && entry.workspaceId !== filter.workspaceId) return false;
  if (filter.execId !== undefined && entry.execId !== filter.execId) return false;
  if (filter.owner !== undefined && entry.owner !== filter.owner) return false;
  return true;
}

/** `2026-12-01 11:20:45.661 ERROR exec w1 exec 0000…0001 pid 11362: refused (exit 1): why`. */
function humanLine(entry: Entry): string {
  const who = [
    text(entry.op),
    entry.workspaceId === undefined ? null : text(entry.workspaceId),
    entry.execId === undefined ? null : `exec ${text(entry.execId)}`,
    `pid ${text(entry.pid)}`,
    entry.workloadPid === undefined ? null : `workload ${text(entry.workloadPid)}`,
    entry.remote === undefined ? null : `on ${text(entry.remote)}`,
  ].filter((part) => part !== null);
  return `${localTime(entry.time)} ${text(entry.level).toUpperCase().padEnd(5)} ${who.join(" ")}: ${summary(entry)}`;
}

function summary(entry: Entry): string {
  const took = typeof entry.durationMs === "number" ? ` in ${Math.round(entry.durationMs)} ms` : "";
  const why = entry.message === undefined ? "" : `: ${text(entry.message)}`;
  switch (entry.event) {
    case "op": {
      const what = typeof entry.signal === "string" ? `${entry.signal} ` : "";
      return entry.status === 0 ? `${what}ok${took}` : `${what}failed (exit ${text(entry.status)})${took}${why}`;
    }
    case "removed":
      return `removed workspace (was ${text(entry.status)}${entry.kind ? `, ${text(entry.kind)}` : ""}${entry.root ? ` at ${text(entry.root)}` : ""})`;
    case "exec":
      if (entry.outcome === "refused") return `refused (exit ${text(entry.status)}), nothing launched${why}`;
      if (entry.outcome === "failed") return `failed after launch${took}${why}`;
      return `${entry.signal ? `killed by ${text(entry.signal)}` : `exited ${text(entry.code)}`}${took} (${text(entry.mode)}, ${text(entry.purpose)})`;
    case "exec-error":
      return `error event${entry.sentToDaemon === false ? " (not sent: one was already)" : ""}${why}`;
    case "unknown-option":
      return unknownOptionText(text(entry.key), typeof entry.nearest === "string" ? entry.nearest : null);
    case "spawn":
      return `spawn ${JSON.stringify(entry.argv)} cwd ${JSON.stringify(entry.cwd ?? "")} stdio ${JSON.stringify(entry.stdio)} env keys ${JSON.stringify(entry.envKeys)}`;
    case "started":
      return "workload started";
    case "diagnostic":
      return text(entry.message);
    case "settled":
      return `finished the record of an ended execution: ${text(entry.message)}`;
    default: {
      const { time: _t, level: _l, event, pid: _p, op: _o, owner: _w, workspaceId: _i, execId: _e, workloadPid: _k, ...rest } = entry;
      return `${text(event)} ${JSON.stringify(rest)}`;
    }
  }
}

function text(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? "?";
}

/** An ISO time as local `YYYY-MM-DD HH:MM:SS.mmm` (what an operator compares with their clock). */
function localTime(value: unknown): string {
  const ms = typeof value === "string" ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) return text(value);
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}
