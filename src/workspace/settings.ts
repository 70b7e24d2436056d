/**
 * The lifecycle options this runtime reads from the daemon's `options` map (besides `owner`,
 * see owner.ts, and `stateDirectory`, see store/home.ts). Unknown keys are left to others.
 * Every value is checked before anything changes.
 */

export interface LifecycleSettings {
  /** `hostDirectory`: "adopt" (default) uses a host directory in place; "clone" copies it into owned storage. */
  hostDirectory: "adopt" | "clone";
  /** `lifecycleEnvironment`: extra lifecycle environment entries, merged over the runtime's own. */
  lifecycleEnvironment: Record<string, string>;
  /** `exposeHostVisiblePath`: whether placements carry hostVisiblePath (default true). */
  exposeHostVisiblePath: boolean;
  /** `stopTimeoutMs`: pause's grace between SIGTERM and SIGKILL (default 2000). */
  stopTimeoutMs: number;
}

export const DEFAULT_STOP_TIMEOUT_MS = 2000;

/** Reads and validates the lifecycle options. */
export function lifecycleSettings(options: Record<string, unknown>): LifecycleSettings {
  return {
    hostDirectory: hostDirectoryOf(options.hostDirectory),
    lifecycleEnvironment: environmentOf(options.lifecycleEnvironment),
    exposeHostVisiblePath: booleanOf(options.exposeHostVisiblePath, "exposeHostVisiblePath", true),
    stopTimeoutMs: stopTimeoutOf(options.stopTimeoutMs),
  };
}

function hostDirectoryOf(value: unknown): "adopt" | "clone" {
  if (value === undefined) return "adopt";
  if (value === "adopt" || value === "clone") return value;
  throw new Error(`options.hostDirectory must be "adopt" or "clone", got ${JSON.stringify(value)}`);
}

function booleanOf(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value === "boolean") return value;
  throw new Error(`options.${name} must be true or false, got ${JSON.stringify(value)}`);
}

function stopTimeoutOf(value: unknown): number {
  if (value === undefined) return DEFAULT_STOP_TIMEOUT_MS;
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 3_600_000) return value;
  throw new Error(`options.stopTimeoutMs must be an integer number of milliseconds between 0 and 3600000, got ${JSON.stringify(value)}`);
}

/** A string → string map; built with fromEntries so keys like "__proto__" stay ordinary keys. */
function environmentOf(value: unknown): Record<string, string> {
  if (value === undefined) return {};
  const fail = (why: string) => new Error(`options.lifecycleEnvironment ${why}`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw fail(`must be an object of strings, got ${JSON.stringify(value)}`);
  const entries = Object.entries(value);
  for (const [key, item] of entries) {
    if (typeof item !== "string") throw fail(`value of ${JSON.stringify(key)} must be a string, got ${JSON.stringify(item)}`);
    if (key === "" || key.includes("=") || key.includes("\0") || item.includes("\0")) {
      throw fail(`entry ${JSON.stringify(key)} is not a valid environment variable (empty name, "=" or NUL)`);
    }
  }
  return Object.fromEntries(entries);
}
