/**
 * The flags operator commands share and their documentation, for the command table (src/cli.ts).
 * Pure data, loaded by every call: nothing here may import an operator command's code.
 */
import { HOME_ENV, type FlagDoc } from "../argv.ts";
import { parseJsonText } from "../protocol/json-text.ts";
import { optionDefaults } from "./option-defaults.ts" with { type: "macro" };

/** The defaults help quotes, read from options.ts when the binary is bundled (see option-defaults.ts). */
const DEFAULTS = optionDefaults();

/** options.owner's default, as help quotes it. */
export const OWNER_DEFAULT = JSON.stringify(DEFAULTS.owner);

/** Options flags every store-touching operator command takes. */
export const STORE_FLAGS = ["home", "owner"] as const;

/** Flags that give the daemon's whole `options` map: inline JSON, or a runtime of a config.json. */
export const OPTIONS_FLAGS = ["options-json", "config", "runtime"] as const;

/** A check for a flag that must be an absolute path; `empty` says why "" is refused. */
function absolutePath(empty: string) {
  return (value: string): string | null => {
    if (value === "") return `must not be empty (${empty})`;
    // path.isAbsolute on POSIX, without loading node:path into every call's start-up.
    if (!value.startsWith("/")) return `must be an absolute path, got ${JSON.stringify(value)}`;
    return null;
  };
}

function jsonObject(value: string): string | null {
  try {
    const parsed: unknown = parseJsonText(value);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return null;
  } catch (error) {
    // Says where and why, never the text: the options may hold secrets (lifecycleEnvironment).
    return `is not valid JSON: ${(error as Error).message}`;
  }
  return "must be a JSON object (the daemon's options map)";
}

/** The documentation of flags several operator commands share; each spec spreads what it takes. */
const FLAG_DOCS = {
  "workspace-id": { value: "W", help: "the workspace id (what the daemon calls it)" },
  home: {
    value: "DIR",
    help: "the runtime home, absolute (options.stateDirectory)",
    default: "$PASEO_HOST_RUNTIME_HOME, else the user's state directory",
    check: absolutePath("an empty home would be the current directory"),
  },
  owner: { value: "NAME", help: "the owner stamped on workspaces (options.owner)", default: OWNER_DEFAULT },
  "options-json": { value: "JSON", help: "the daemon's whole options map, as JSON; --home, --owner and the like override its keys", check: jsonObject },
  config: { value: "FILE", help: "work on a runtime of the daemon's config.json with its options and command; one with --remote on its hosts, over its ssh" },
  runtime: { value: "NAME", help: "which workspaceRuntimes entry of --config (alone: of $PASEO_HOME/config.json, else ~/.paseo/config.json)", default: "the only one that runs paseo-host-runtime" },
  "helper-path": { value: "PATH", help: "absolute path of paseo-workspace-helper (options.helperPath)", check: absolutePath("give the helper's absolute path") },
  json: { help: "print one JSON document (for scripts)" },
} satisfies Record<string, FlagDoc>;

/** The environment variables that decide the runtime home (for `env` in a spec). */
export const STORE_ENV = HOME_ENV;

/** The grace between SIGTERM and SIGKILL, as help text names it. */
export const STOP_GRACE = `the stopTimeoutMs grace (default ${DEFAULTS.stopTimeoutMs} ms)`;

/** `-w` for --workspace-id, as everywhere in the operator commands. */
export const W = { w: "workspace-id" } as const;
/** The usage words of the flags that select a home and its options. */
export const SELECT = "[--home DIR] [--owner NAME] [--options-json JSON | [--config FILE] --runtime NAME | --config FILE]";

/** How ls, ps and logs end, local or across the hosts of a remote runtime. */
export const VIEW_EXIT = "Exit status: 0 success; 1 the runtime home does not exist, or a host of a remote runtime did not answer (said on stderr; the other hosts are still shown); 2 usage error.";

/** Which runtime is a remote one, as help says it. */
const REMOTE_RUNTIME = "With a --remote runtime (its command in --config, or --remote URL [--ssh-config FILE] before the command)";

/** What `--remote` before the command, or a remote runtime of --config, means for a command: one paragraph saying what it does there. */
export function remoteNote(what: string): string {
  return `${REMOTE_RUNTIME}: ${what} Over the runtime's own ssh, with the home and owner its hosts get (options.remote.*).`;
}

/** The flag docs a command takes from FLAG_DOCS, plus its own. */
export function docs(names: readonly (keyof typeof FLAG_DOCS)[], own: Record<string, FlagDoc> = {}): Record<string, FlagDoc> {
  return { ...Object.fromEntries(names.map((name) => [name, FLAG_DOCS[name]])), ...own };
}

/** The flags most operator commands take. */
export const SHARED = ["home", "owner", "options-json", "config", "runtime", "json"] as const;
