/**
 * `homes [--config FILE] [--json]`: the runtime homes this binary works in, and what each holds:
 * the home of every runtime of the daemon's config.json that runs paseo-host-runtime (this binary,
 * or another copy: install.sh runs the one it uninstalls, which the config may name by another path), then the default
 * home. What `install.sh --uninstall` shows (and stops at) before it removes the binary that
 * could still remove those workspaces: a worktree stays registered in the user's repository,
 * and a sandboxed workspace's files stay on disk, until `rm` removes them.
 */
import { existsSync } from "node:fs";
import type { Invocation } from "../argv.ts";
import { diagnose } from "../output.ts";
import { optionProblems, validOptions } from "../options.ts";
import { defaultHome, resolveHome } from "../store/home.ts";
import { listWorkspaces } from "../store/workspaces.ts";
import { openExistingStore, printJson, printLines, shellQuote } from "./common.ts";
import { type DaemonConfig, DaemonConfigError, defaultConfigPath, ourRuntimes, readDaemonConfig } from "./daemon-config.ts";

/** One workspace as `homes` shows it: what destroying it would undo. */
interface HomeWorkspace {
  workspaceId: string;
  owner: string;
  kind: string | null;
  root: string | null;
  /** The user's repository a worktree of it is registered in, or null. */
  repository: string | null;
  isolation: string | null;
}

interface Home {
  home: string;
  exists: boolean;
  /** Who uses it: `runtime NAME of FILE`, or `the default home`. */
  usedBy: string[];
  workspaces: HomeWorkspace[];
}

/** The homes of the config's runtimes that run this binary (remote ones keep their placements here), then the default home. */
function homesInUse(configPath: string, explicit: boolean): { homes: Map<string, string[]>; notes: string[] } {
  /** Each home, and who uses it. */
  const homes = new Map<string, string[]>();
  const notes: string[] = [];
  const add = (home: string, by: string) => homes.set(home, [...(homes.get(home) ?? []), by]);
  const config = explicit || existsSync(configPath) ? configOrNote(configPath, notes) : null;
  if (config !== null) {
    for (const runtime of ourRuntimes(config)) {
      // Another copy too (install.sh runs the one it is uninstalling; the config may name it by another path).
      if (!runtime.thisBinary && !runtime.otherCopy) continue;
      const raw = typeof runtime.options === "object" && runtime.options !== null ? (runtime.options as Record<string, unknown>) : {};
      const options = validOptions(raw);
      if (options === null) {
        notes.push(`runtime ${runtime.name} of ${config.path}: its options are refused (${optionProblems(raw).join("; ")}); config check says more`);
        continue;
      }
      add(resolveHome(options), `runtime ${runtime.name} of ${config.path}${runtime.thisBinary ? "" : `, running ${runtime.program}`}${runtime.remote === null ? "" : ` (remote: its workspaces live on its hosts; ls --config ${shellQuote(config.path)} --runtime ${shellQuote(runtime.name)})`}`);
    }
  }
  const home = resolveHome({});
  add(home, home === defaultHome() ? "the default home" : "the home PASEO_HOST_RUNTIME_HOME names");
  return { homes, notes };
}

/** The daemon's config, or null with a note saying why its runtimes' homes are not listed. */
function configOrNote(path: string, notes: string[]): DaemonConfig | null {
  try {
    return readDaemonConfig(path);
  } catch (error) {
    if (!(error instanceof DaemonConfigError)) throw error;
    notes.push(`the homes of the daemon's runtimes are not listed: ${error.message}; config check says more`);
    return null;
  }
}

/** What a home holds (any owner's workspaces): none when it, or its store, does not exist. */
function contents(home: string): HomeWorkspace[] {
  const { store } = openExistingStore({ stateDirectory: home });
  if (!store) return [];
  try {
    return listWorkspaces(store.db).map((record) => ({
      workspaceId: record.workspaceId,
      owner: record.owner,
      kind: record.kind,
      root: record.root,
      repository: record.kind === "worktree" ? (record.details.repo ?? null) : null,
      isolation: record.isolation?.isolation ?? null,
    }));
  } finally {
    store.db.close();
  }
}

function workspaceLine(home: string, w: HomeWorkspace): string {
  const what = w.kind === "worktree" ? `a worktree registered in ${w.repository ?? "its repository"}` : w.kind === "adopted" ? `adopts ${w.root}` : `${w.kind ?? "not created yet"}${w.root ? ` ${w.root}` : ""}`;
  const sandboxed = w.isolation === "sandbox" ? ", sandboxed" : "";
  return `    ${w.workspaceId} (owner ${w.owner}${sandboxed}): ${what}; remove: ${shellQuote(process.execPath)} rm -w ${shellQuote(w.workspaceId)} --home ${shellQuote(home)} --owner ${shellQuote(w.owner)} --force`;
}

/**
 * Exit 1 when a home could not be told (the config or a runtime's options refused: each a note),
 * after showing every home it could: install.sh --uninstall must not take "no workspaces in the
 * homes shown" for "no workspaces".
 */
export function homes(invocation: Invocation): number {
  const given = invocation.flags.get("config");
  const found = homesInUse(given ?? defaultConfigPath(), given !== undefined);
  const report: Home[] = [...found.homes].map(([home, usedBy]) => ({ home, exists: existsSync(home), usedBy, workspaces: contents(home) }));
  if (invocation.switches.has("json")) printJson({ homes: report, notes: found.notes });
  else printLines(textReport(report, found.notes));
  if (found.notes.length === 0) return 0;
  diagnose("homes: not every runtime home could be told (the notes above say why)");
  return 1;
}

function textReport(report: Home[], notes: string[]): string[] {
  const lines: string[] = [];
  for (const { home, exists, usedBy, workspaces } of report) {
    const held = !exists ? "does not exist" : workspaces.length === 0 ? "no workspaces" : `${workspaces.length} workspace(s)`;
    lines.push(`${home}: ${held} (${usedBy.join("; ")})`, ...workspaces.map((w) => workspaceLine(home, w)));
  }
  return [...lines, ...notes];
}
