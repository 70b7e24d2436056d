/**
 * The daemon's `options` map, as this runtime reads it: one schema and one reader, used by
 * every operation. The map is open (the daemon may carry keys meant for others), so unknown
 * keys are reported by `unknownOptions`, never rejected.
 */
import * as v from "valibot";
import { isAbsolute, normalize } from "node:path";

/** The owner stamped on workspaces when `options.owner` is absent. */
export const DEFAULT_OWNER = "default";
export const DEFAULT_STOP_TIMEOUT_MS = 2000;
/** What the runtime log keeps: `error` only failures, `info` (default) every outcome, `debug` also spawn envelopes. */
export const LOG_LEVELS = ["error", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** runtime.log is rotated before it would pass this many bytes (see src/log/files.ts). */
export const DEFAULT_LOG_MAX_BYTES = 4 * 1024 * 1024;

/** How workloads are confined: not at all (the default), or inside the platform's sandbox. */
export const ISOLATIONS = ["none", "sandbox"] as const;
export type Isolation = (typeof ISOLATIONS)[number];
/** A sandboxed workload's network: the host's, or none. */
export const NETWORKS = ["host", "none"] as const;

/** `got "x"` for a diagnostic; `undefined` and functions are not JSON. */
function shown(value: unknown): string {
  return value === undefined ? "nothing" : JSON.stringify(value);
}

/** A message naming the option, what it must be, and what arrived. */
function mustBe(name: string, what: string) {
  return (issue: v.BaseIssue<unknown>) => `options.${name} must be ${what}, got ${shown(issue.input)}`;
}

function absolutePath(name: string) {
  const message = mustBe(name, "an absolute path");
  return v.pipe(
    v.string(message),
    v.check((path) => isAbsolute(path) && !path.includes("\0"), message),
  );
}

/** A list of absolute, normalized paths (no `..`, `.`, `//` or trailing `/`), default []. */
function absolutePaths(name: string) {
  const message = mustBe(name, "a list of absolute paths (normalized, without NUL)");
  return v.optional(
    v.array(
      v.pipe(
        v.string(message),
        v.check((path) => isAbsolute(path) && !path.includes("\0") && normalize(path) === path && (path === "/" || !path.endsWith("/")), message),
      ),
      message,
    ),
    [],
  );
}

function flag(name: string) {
  return v.boolean(mustBe(name, "true or false"));
}

function milliseconds(name: string, max: number) {
  return integer(name, "milliseconds", 0, max);
}

function integer(name: string, unit: string, min: number, max: number) {
  const message = mustBe(name, `an integer number of ${unit} between ${min} and ${max}`);
  return v.pipe(v.number(message), v.integer(message), v.minValue(min, message), v.maxValue(max, message));
}

/** Why `value` is not a map of environment entries, or null. */
function environmentProblem(name: string, value: unknown): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return `options.${name} must be an object of strings, got ${shown(value)}`;
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== "string") return `options.${name} value of ${JSON.stringify(key)} must be a string, got ${shown(item)}`;
    if (key === "" || key.includes("=") || key.includes("\0") || item.includes("\0")) {
      return `options.${name} entry ${JSON.stringify(key)} is not a valid environment variable (empty name, "=" or NUL)`;
    }
  }
  return null;
}

/** A string → string map; rebuilt with fromEntries so keys like "__proto__" stay ordinary keys. */
function environment(name: string) {
  return v.pipe(
    v.unknown(),
    v.rawCheck(({ dataset, addIssue }) => {
      const problem = environmentProblem(name, dataset.value);
      if (problem) addIssue({ message: problem });
    }),
    v.transform((value) => Object.fromEntries(Object.entries(value as Record<string, string>)) as Record<string, string>),
  );
}

const ownerMessage = mustBe("owner", "a non-empty string without NUL");

/** Every option this runtime reads, with its default. Key order is the documented order. */
export const RuntimeOptions = v.object({
  /** Stamped on every workspace; operations on another owner's workspace are refused. */
  owner: v.optional(
    v.pipe(
      v.string(ownerMessage),
      v.check((owner) => owner !== "" && !owner.includes("\0"), ownerMessage),
    ),
    DEFAULT_OWNER,
  ),
  /** The runtime home; resolved with the environment's fallbacks by store/home.ts. */
  stateDirectory: v.optional(absolutePath("stateDirectory")),
  /** A host directory placed `existing`: used in place, or cloned into owned storage. */
  hostDirectory: v.optional(v.picklist(["adopt", "clone"], mustBe("hostDirectory", `"adopt" or "clone"`)), "adopt"),
  /** Absolute path of paseo-workspace-helper, looked at after the envelope's PATH. */
  helperPath: v.optional(absolutePath("helperPath")),
  /** Entries merged over the runtime's own lifecycle environment. */
  lifecycleEnvironment: v.optional(environment("lifecycleEnvironment"), {}),
  /** Whether placements carry hostVisiblePath. */
  exposeHostVisiblePath: v.optional(flag("exposeHostVisiblePath"), true),
  /** Grace between SIGTERM and SIGKILL when executions are stopped. */
  stopTimeoutMs: v.optional(milliseconds("stopTimeoutMs", 3_600_000), DEFAULT_STOP_TIMEOUT_MS),
  /** Which lines the runtime log keeps. */
  logLevel: v.optional(v.picklist(LOG_LEVELS, mustBe("logLevel", `"error", "info" or "debug"`)), "info"),
  /** Size bound of one log file before it is rotated. */
  logMaxBytes: v.optional(integer("logMaxBytes", "bytes", 65_536, 1_073_741_824), DEFAULT_LOG_MAX_BYTES),
  /** `sandbox`: every workload runs under bubblewrap (macOS: sandbox-exec); `none` runs it as the daemon's user, unconfined. */
  isolation: v.optional(v.picklist(ISOLATIONS, mustBe("isolation", `"none" or "sandbox"`)), "none"),
  /** Under the sandbox: `host` shares the host's network, `none` gives the workload no network at all. */
  network: v.optional(v.picklist(NETWORKS, mustBe("network", `"host" or "none"`)), "host"),
  /** Under the sandbox: more host paths the workload sees read-only, at the same path. */
  sandboxReadOnly: absolutePaths("sandboxReadOnly"),
  /** Under the sandbox: more host paths the workload sees read-write, at the same path. */
  sandboxReadWrite: absolutePaths("sandboxReadWrite"),
});

export type RuntimeOptions = v.InferOutput<typeof RuntimeOptions>;

/** The keys RuntimeOptions knows. */
export const KNOWN_OPTIONS: readonly string[] = Object.keys(RuntimeOptions.entries);

/** Validates the options every operation relies on; throws the first problem, naming the option. */
export function readOptions(options: Record<string, unknown>): RuntimeOptions {
  const result = v.safeParse(RuntimeOptions, options, { abortEarly: true });
  if (result.success) return result.output;
  throw new Error(result.issues[0].message);
}

/** An option key this runtime does not know, and the known key it most resembles (if any). */
export interface UnknownOption {
  key: string;
  nearest: string | null;
}

/** Keys of `options` this runtime does not read, each with the nearest known key. */
export function unknownOptions(options: Record<string, unknown>): UnknownOption[] {
  return Object.keys(options)
    .filter((key) => !KNOWN_OPTIONS.includes(key))
    .map((key) => ({ key, nearest: nearestOption(key) }));
}

/** The known key closest to `key` (case-insensitive edit distance ≤ a third of its length), or null. */
function nearestOption(key: string): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const known of KNOWN_OPTIONS) {
    // The distance is at least the difference in length: skip the quadratic work (every
    // lifecycle call, inspect included, looks up each unknown key).
    if (Math.abs(key.length - known.length) >= bestDistance) continue;
    const distance = editDistance(key.toLowerCase(), known.toLowerCase());
    if (distance < bestDistance) {
      best = known;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
