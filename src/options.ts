/**
 * The daemon's `options` map, as this runtime reads it: one schema and one reader, used by
 * every operation. The map is open (the daemon may carry keys meant for others), so unknown
 * keys are reported by `unknownOptions`, never rejected.
 */
import { nearestWord } from "./nearest.ts";
import * as v from "valibot";
import { isAbsolute } from "node:path";
import { isSshUrl, SSH_URL_GRAMMAR } from "./ssh-url.ts";
import { once } from "./platform/lazy.ts";
import { issueMessage, jsonTypeName, quotableName } from "./protocol/common.ts";
import { sandboxDefaults, sandboxOptionEntries } from "./sandbox/settings.ts";

/** The owner stamped on workspaces when `options.owner` is absent. */
export const DEFAULT_OWNER = "default";
export const DEFAULT_STOP_TIMEOUT_MS = 2000;
/** What the runtime log keeps: `error` only failures, `info` (default) every outcome, `debug` also spawn envelopes. */
const LOG_LEVELS = ["error", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** runtime.log is rotated before it would pass this many bytes (see src/log/files.ts). */
const DEFAULT_LOG_MAX_BYTES = 4 * 1024 * 1024;
/** The git transports a git URL source may use unless the operator says otherwise. */
const DEFAULT_GIT_PROTOCOLS: readonly string[] = ["https", "ssh", "git", "file"];
/** How long one git command may run (a clone of a large repository over a slow link included). */
export const DEFAULT_GIT_TIMEOUT_MS = 600_000;

/**
 * Transports never allowed, whatever the option says: `ext::` runs a shell command taken from
 * the URL, and `fd::` talks over descriptors the runtime never passes (git waits forever).
 */
const NEVER_GIT_PROTOCOLS: Record<string, string> = {
  ext: "runs a command named in the URL",
  fd: "needs descriptors the runtime never passes, so git would wait forever",
};

/**
 * An option's schema, built the first time a map carries the option. Building all of them
 * (about a hundred valibot objects) cost every lifecycle call ~0.5–2 ms; a daemon sends a few.
 */
function given<S extends v.GenericSchema>(build: () => S) {
  return v.lazy(once(build));
}

/**
 * A message naming the option, what it must be, and the type of what arrived: never its value
 * (options carry secrets, lifecycleEnvironment first, and a mistyped one lands in any key).
 */
function mustBe(name: string, what: string) {
  return (issue: v.BaseIssue<unknown>) => `options.${name} must be ${what}, got ${jsonTypeName(issue.input)}`;
}

function absolutePath(name: string) {
  const message = mustBe(name, "an absolute path");
  return v.pipe(
    v.string(message),
    v.check((path) => isAbsolute(path) && !path.includes("\0"), message),
  );
}

function flag(name: string) {
  return v.boolean(mustBe(name, "true or false"));
}

function milliseconds(name: string, max: number, min = 0) {
  return integer(name, "milliseconds", min, max);
}

function integer(name: string, unit: string, min: number, max: number) {
  const message = mustBe(name, `an integer number of ${unit} between ${min} and ${max}`);
  return v.pipe(v.number(message), v.integer(message), v.minValue(min, message), v.maxValue(max, message));
}

/** A list of git transport names (as git's `protocol.<name>.allow` spells them), without duplicates. */
function gitProtocols(name: string) {
  const message = mustBe(name, 'a list of git transport names such as ["https", "ssh"]');
  return v.pipe(
    v.array(v.pipe(v.string(message), v.regex(/^[a-z][a-z0-9+.-]*$/, message)), message),
    v.rawCheck(({ dataset, addIssue }) => {
      const list = dataset.value as string[];
      const refused = list.find((protocol) => Object.hasOwn(NEVER_GIT_PROTOCOLS, protocol));
      if (refused) addIssue({ message: `options.${name} must not contain "${refused}": that transport ${NEVER_GIT_PROTOCOLS[refused]}` });
    }),
    v.transform((list) => [...new Set(list)]),
  );
}

/** Why `value` is not a map of environment entries, or null. */
function environmentProblem(name: string, value: unknown): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return `options.${name} must be an object of strings, got ${jsonTypeName(value)}`;
  let position = 0;
  for (const [key, item] of Object.entries(value)) {
    const quoted = quotableName(key);
    position++;
    if (typeof item !== "string") return `options.${name} value of ${quoted ?? `entry number ${position}`} must be a string, got ${jsonTypeName(item)}`;
    if (key === "" || key.includes("=") || key.includes("\0") || item.includes("\0")) {
      return `options.${name} entry ${quoted ?? `number ${position}`} is not a valid environment variable (empty name, "=" or NUL)`;
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

function ownerName(name: string) {
  const message = mustBe(name, "a non-empty string without NUL");
  return v.pipe(
    v.string(message),
    v.check((owner) => owner !== "" && !owner.includes("\0"), message),
  );
}

const hostsMessage = mustBe("remote.hosts", `a non-empty list of ${SSH_URL_GRAMMAR} URLs`);

/** `remote.*`: used only when the runtime runs with `--remote`; never sent to a remote host. */
const remoteOptions = () =>
  v.strictObject(
    {
      /** More hosts besides the `--remote` one; each workspace lives on exactly one of them. */
      hosts: v.optional(v.pipe(v.array(v.string(hostsMessage), hostsMessage), v.minLength(1, hostsMessage), v.check((hosts) => hosts.every(isSshUrl), hostsMessage))),
      /** How a new workspace picks its host. */
      placement: v.optional(v.picklist(["hash", "least-loaded"], mustBe("remote.placement", `"hash" or "least-loaded"`)), "hash"),
      /** The runtime home on the remote hosts (their default when absent). */
      stateDirectory: v.optional(absolutePath("remote.stateDirectory")),
      /** The owner stamped on the remote side; default `<owner>@<this host's name>`. */
      owner: v.optional(ownerName("remote.owner")),
      /** options.helperPath for the remote side. */
      helperPath: v.optional(absolutePath("remote.helperPath")),
      /** How long an idle shared ssh connection stays open; 0 opens one connection per call. */
      controlPersistSeconds: v.optional(integer("remote.controlPersistSeconds", "seconds", 0, 86_400), 60),
      /** ssh ConnectTimeout. */
      connectTimeoutSeconds: v.optional(integer("remote.connectTimeoutSeconds", "seconds", 1, 3600), 10),
      /** ssh ServerAliveInterval (a dead connection is noticed after three missed answers); 0 turns it off. */
      serverAliveIntervalSeconds: v.optional(integer("remote.serverAliveIntervalSeconds", "seconds", 0, 3600), 15),
      /**
       * A remote call that shows no progress (no byte, no keepalive) for this long is ended:
       * a healthy connection to a stalled remote runtime. A slow clone sends keepalives.
       */
      idleTimeoutSeconds: v.optional(integer("remote.idleTimeoutSeconds", "seconds", 1, 86_400), 60),
    },
    (issue) =>
      issue.expected === "never"
        ? `options.remote has an unknown key ${JSON.stringify(issue.path?.at(-1)?.key)} (known: hosts, placement, stateDirectory, owner, helperPath, controlPersistSeconds, connectTimeoutSeconds, serverAliveIntervalSeconds, idleTimeoutSeconds)`
        : `options.remote must be an object, got ${jsonTypeName(issue.input)}`,
  );

export type RemoteOptions = v.InferOutput<ReturnType<typeof remoteOptions>>;

/**
 * A cgroup v2 limit: the file's own syntax as a string, or a plain integer. `pattern` says
 * what the file accepts; `check` adds the kernel's ranges. The value is written as given.
 */
function limit(name: string, what: string, pattern: RegExp, check: (value: string) => boolean = () => true) {
  const message = mustBe(name, what);
  return v.pipe(
    v.union([v.pipe(v.number(message), v.integer(message), v.minValue(0, message)), v.string(message)], message),
    v.check((value) => pattern.test(String(value)) && check(String(value)), message),
    v.transform((value) => String(value)),
  );
}

/** cpu.max: "max" or a quota, optionally with a period; both in µs, period 1000 to 1000000, quota at least 1000. */
function cpuMaxInRange(value: string): boolean {
  const [quota, period] = value.split(" ");
  if (quota !== "max" && Number(quota) < 1000) return false;
  return period === undefined || (Number(period) >= 1000 && Number(period) <= 1_000_000);
}

/**
 * Every option this runtime reads. Key order is the documented order. Defaults are applied by
 * `withDefaults`, not by the schema: valibot validates a schema's default, which would build
 * the schema of every option that has one on every call.
 */
const RuntimeOptionsSchema = v.object({
  /** Stamped on every workspace; operations on another owner's workspace are refused. */
  owner: v.optional(given(() => ownerName("owner"))),
  /** The runtime home; resolved with the environment's fallbacks by store/home.ts. */
  stateDirectory: v.optional(given(() => absolutePath("stateDirectory"))),
  /** A host directory placed `existing`: used in place, or cloned into owned storage. */
  hostDirectory: v.optional(given(() => v.picklist(["adopt", "clone"], mustBe("hostDirectory", `"adopt" or "clone"`)))),
  /** Absolute path of paseo-workspace-helper, looked at after the envelope's PATH. */
  helperPath: v.optional(given(() => absolutePath("helperPath"))),
  /** Entries merged over the runtime's own lifecycle environment. */
  lifecycleEnvironment: v.optional(given(() => environment("lifecycleEnvironment"))),
  /** Whether placements carry hostVisiblePath. */
  exposeHostVisiblePath: v.optional(given(() => flag("exposeHostVisiblePath"))),
  /** Grace between SIGTERM and SIGKILL when executions are stopped. */
  stopTimeoutMs: v.optional(given(() => milliseconds("stopTimeoutMs", 3_600_000))),
  /** Which lines the runtime log keeps. */
  logLevel: v.optional(given(() => v.picklist(LOG_LEVELS, mustBe("logLevel", `"error", "info" or "debug"`)))),
  /** Size bound of one log file before it is rotated. */
  logMaxBytes: v.optional(given(() => integer("logMaxBytes", "bytes", 65_536, 1_073_741_824))),
  /** The transports git may use for a git URL source and the remotes a create fetches from. */
  allowedGitProtocols: v.optional(given(() => gitProtocols("allowedGitProtocols"))),
  /** How long one git command may run before its whole process group is killed. */
  gitTimeoutMs: v.optional(given(() => milliseconds("gitTimeoutMs", 86_400_000, 1))),
  /** Settings of `--remote` (see remoteOptions); absent when the runtime runs locally. */
  remote: v.optional(given(remoteOptions)),
  /** auto: a cgroup per execution when a cgroup v2 hierarchy is usable, else process groups. */
  containment: v.optional(given(() => v.picklist(["auto", "cgroup", "process-group"], mustBe("containment", `"auto", "cgroup" or "process-group"`)))),
  /** A writable, delegated cgroup v2 directory to hold this runtime's cgroups (else autodetected). */
  cgroupRoot: v.optional(given(() => absolutePath("cgroupRoot"))),
  /** memory.max of each workspace's cgroup. */
  memoryMax: v.optional(given(() => limit("memoryMax", `"max" or a number of bytes, optionally with a K, M, G or T suffix (memory.max syntax)`, /^(max|[0-9]+[KMGT]?)$/))),
  /** pids.max of each workspace's cgroup. */
  pidsMax: v.optional(given(() => limit("pidsMax", `"max" or a positive number of processes (pids.max syntax)`, /^(max|[1-9][0-9]*)$/))),
  /** cpu.max of each workspace's cgroup. */
  cpuMax: v.optional(given(() => limit("cpuMax", `"max", "QUOTA" or "QUOTA PERIOD" in microseconds, quota ≥ 1000, period 1000–1000000 (cpu.max syntax)`, /^(max|[0-9]+)( [0-9]+)?$/, cpuMaxInRange))),
  /** isolation, network, sandboxReadOnly, sandboxReadWrite: the sandbox settings (sandbox/settings.ts). */
  ...sandboxOptionEntries(given, mustBe),
  /**
   * Set by a `--remote` caller on the options a host gets: the daemon configuration the call
   * comes from (remote/context.ts). Read by nothing but the configuration fingerprint.
   */
  callerConfiguration: v.optional(given(() => v.pipe(v.string(mustBe("callerConfiguration", "a SHA-256 in hex")), v.regex(/^[0-9a-f]{64}$/, mustBe("callerConfiguration", "a SHA-256 in hex"))))),
});

/** The options as given: each key the map had, validated. */
type GivenOptions = v.InferOutput<typeof RuntimeOptionsSchema>;

/** The options with every default filled in (the options table of docs/operators.md lists them). */
function withDefaults(given: GivenOptions) {
  return {
    ...given,
    owner: given.owner ?? DEFAULT_OWNER,
    hostDirectory: given.hostDirectory ?? "adopt",
    lifecycleEnvironment: given.lifecycleEnvironment ?? {},
    exposeHostVisiblePath: given.exposeHostVisiblePath ?? true,
    stopTimeoutMs: given.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS,
    logLevel: given.logLevel ?? "info",
    logMaxBytes: given.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES,
    allowedGitProtocols: given.allowedGitProtocols ?? [...DEFAULT_GIT_PROTOCOLS],
    gitTimeoutMs: given.gitTimeoutMs ?? DEFAULT_GIT_TIMEOUT_MS,
    containment: given.containment ?? "auto",
    ...sandboxDefaults(given),
  };
}

export type RuntimeOptions = ReturnType<typeof withDefaults>;

/** The keys RuntimeOptions knows. */
export const KNOWN_OPTIONS: readonly string[] = Object.keys(RuntimeOptionsSchema.entries);

/** Validates the options every operation relies on; throws the first problem, naming the option. */
export function readOptions(options: Record<string, unknown>): RuntimeOptions {
  const result = parseOptions(options);
  if (result.success) return withDefaults(result.output);
  throw new Error(result.issues[0].message);
}

function parseOptions(options: Record<string, unknown>) {
  return v.safeParse(RuntimeOptionsSchema, options, { abortEarly: true, message: issueMessage });
}

/** readOptions, or null when they are not valid: for a caller that is not the one to say why. */
export function validOptions(options: Record<string, unknown>): RuntimeOptions | null {
  const result = parseOptions(options);
  return result.success ? withDefaults(result.output) : null;
}

/**
 * Every problem with the values of the known keys of `options`, one message per key, from the
 * same schema readOptions uses (readOptions stops at the first).
 */
export function optionProblems(options: Record<string, unknown>): string[] {
  const result = v.safeParse(RuntimeOptionsSchema, options, { abortPipeEarly: true, message: issueMessage });
  return result.success ? [] : [...new Set(result.issues.map((issue) => issue.message))];
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

/** The known key closest to `key`, or null. */
function nearestOption(key: string): string | null {
  return nearestWord(key, KNOWN_OPTIONS);
}
