/**
 * `logs [--workspace-id W] [--exec-id E] [--follow] [--json]`: the runtime log of a home, for
 * people (one readable line per entry) or scripts (the JSON lines as written).
 */
import type { Invocation } from "../argv.ts";
import { diagnose, writeAll } from "../output.ts";
import { logDirectory } from "../log/files.ts";
import { hasErrno } from "../platform/errno.ts";
import { LogFollower, logExists } from "../log/reader.ts";
import { missingHomeIn, resolveHome } from "../store/home.ts";
import { unknownOptionText } from "../log/call-log.ts";
import { failure, hostWords, remoteRuntime, reportHosts, type RemoteRuntime } from "./remote-hosts.ts";
import { missingHomeMessage, operatorOptions } from "./common.ts";
import { selection } from "./selection.ts";
import { printable, terminalJson } from "../printable.ts";
import { callerLost } from "../keepalive.ts";
import { utf8OrNull } from "../protocol/utf8.ts";
import { redactCredentials } from "../redact.ts";
import { hostUrl } from "../remote/context.ts";
import { runRemote } from "../remote/ssh.ts";
import type { RemoteHost } from "../ssh-url.ts";

/** How often `--follow` looks for new lines. */
const FOLLOW_INTERVAL_MS = 200;

type Entry = Record<string, unknown>;

interface Filter {
  workspaceId?: string;
  execId?: string;
  owner?: string;
}

export async function logs(invocation: Invocation): Promise<number> {
  const filter: Filter = { workspaceId: invocation.flags.get("workspace-id"), execId: invocation.flags.get("exec-id"), owner: invocation.flags.get("owner") };
  const chosen = selection(invocation);
  if (chosen.remote !== null) return await logsRemote(invocation, await remoteRuntime(chosen), filter);
  const options = operatorOptions(invocation);
  const home = resolveHome(options);
  const json = invocation.switches.has("json");
  const follow = invocation.switches.has("follow");
  const missing = missingHomeMessage(options);
  if (missing !== null) {
    diagnose(missing);
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
      // Run by a remote runtime's `logs --follow` over ssh whose session is gone: nobody reads any more.
      if (callerLost()) return 0;
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

/** One line of a remote runtime's logs: the host's key ("local": this side's own log) and its URL (null here). */
interface HostEntry {
  column: string;
  url: string | null;
  entry: Entry;
}

/**
 * `logs` of a remote runtime: every host's own `logs --json` (its home; its owner's lines with
 * --owner), and this side's lines of the runtime's calls (the local home's log, lines naming one
 * of its hosts), each with its host. Without --follow, merged by time; with it, as they come. A
 * host that does not answer is said on stderr (exit 1) and the others are shown.
 */
async function logsRemote(invocation: Invocation, runtime: RemoteRuntime, filter: Filter): Promise<number> {
  const json = invocation.switches.has("json");
  const follow = invocation.switches.has("follow");
  const words = ["logs", "--json", ...flagWords(invocation, ["workspace-id", "exec-id"]), ...(follow ? ["--follow"] : [])];
  const width = Math.max("local".length, ...runtime.hosts.map((host) => host.key.length));
  const shown = { lines: 0, malformed: 0 };
  const emit = (entries: readonly HostEntry[]) => {
    let out = "";
    for (const { column, url, entry } of entries) {
      shown.lines++;
      out += json ? `${terminalJson(JSON.stringify({ host: url, ...entry }))}\n` : `${printable(`${column.padEnd(width)}  ${humanLine(entry)}`)}\n`;
    }
    if (out) writeAll(1, out);
  };
  const collected: HostEntry[] = [];
  const take = (one: HostEntry) => (follow ? emit([one]) : collected.push(one));
  const hosts = runtime.hosts.map(async (host) => {
    const url = hostUrl(runtime.ctx, host);
    const ended = await followHost(runtime, host, hostWords(runtime, host, words, filter.owner === undefined), (entry) => take({ column: host.key, url, entry }), shown);
    return { host, url, ...ended, value: null };
  });
  const local = localLines(runtime, filter);
  try {
    if (!follow) {
      local.poll().forEach(take);
      const answers = await Promise.all(hosts);
      for (const { url, missingHome } of answers) if (missingHome !== null) diagnose(`logs: ${url}: no runtime home yet (${missingHome}: nothing was created there)`);
      // A stable sort: one host's lines keep their order, hosts interleave by time.
      emit(collected.sort((a, b) => timeOf(a.entry) - timeOf(b.entry)));
      if (shown.malformed > 0) diagnose(`${shown.malformed} line(s) of the logs are not JSON (cut short by a full disk?) and were skipped`);
      return reportHosts("logs", answers) ? 0 : 1;
    }
    for (const answer of hosts) void answer.then((ended) => reportHosts("logs --follow", [ended]));
    for (;;) {
      local.poll().forEach(take);
      await Bun.sleep(FOLLOW_INTERVAL_MS);
    }
  } catch (error) {
    if (hasErrno(error, ["EPIPE"])) return 0;
    throw error;
  }
}

/** The flags of `invocation` among `names`, as words for a host's command. */
function flagWords(invocation: Invocation, names: readonly string[]): string[] {
  return names.flatMap((name) => {
    const value = invocation.flags.get(name);
    return value === undefined ? [] : [`--${name}`, value];
  });
}

function timeOf(entry: Entry): number {
  const ms = typeof entry.time === "string" ? Date.parse(entry.time) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
}

/**
 * A host's `logs --json` lines as they come, each checked (strict UTF-8, a JSON object) and
 * handed to `onEntry`; how it ended: why there is no answer, or the home it says does not exist.
 */
async function followHost(runtime: RemoteRuntime, host: RemoteHost, words: string[], onEntry: (entry: Entry) => void, shown: { malformed: number }): Promise<{ problem: string | null; missingHome: string | null }> {
  let pending: Uint8Array = new Uint8Array(0);
  const onStdout = (chunk: Uint8Array) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    for (let nl = pending.indexOf(0x0a); nl !== -1; nl = pending.indexOf(0x0a)) {
      const line = pending.subarray(0, nl);
      pending = pending.subarray(nl + 1);
      // Not UTF-8: counted below, like a line that is not JSON.
      const text = utf8OrNull(line);
      const entry = text === null ? null : parse(text);
      if (entry) onEntry(entry);
      else shown.malformed++;
    }
  };
  try {
    const result = await runRemote(host, runtime.ctx.settings, words, null, { stderr: "keep", onStdout });
    if (result.status === 0) return { problem: null, missingHome: null };
    const home = missingHomeIn(result.stderrHead);
    return { problem: home === null ? failure(host, result.status, result.stderrHead) : null, missingHome: home };
  } catch (error) {
    return { problem: (error as Error).message, missingHome: null };
  }
}

/** This side's log lines of the runtime's calls: the local home's log, lines that name one of its hosts. */
function localLines(runtime: RemoteRuntime, filter: Filter): { poll(): HostEntry[] } {
  const directory = logDirectory(runtime.ctx.home);
  const follower = new LogFollower(directory);
  const urls = new Set(runtime.hosts.map((host) => redactCredentials(hostUrl(runtime.ctx, host))));
  const ours = (entry: Entry) => [entry.remote].flat().some((url) => typeof url === "string" && urls.has(url));
  return {
    poll: () => {
      if (!logExists(directory)) return [];
      return follower
        .poll()
        .map(parse)
        .filter((entry): entry is Entry => entry !== null && matches(entry, filter) && ours(entry))
        .map((entry) => ({ column: "local", url: null, entry }));
    },
  };
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
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
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
