/**
 * The sandbox settings an operator writes (options `isolation`, `network`, `sandboxReadOnly`,
 * `sandboxReadWrite`), and the form a workspace records them in: one schema, every type derived
 * from it. The option schema (options.ts), the record and its JSON column (store/workspaces.ts),
 * the `ls` view (operator/views.ts) and the "at least as confined" rule (isolation.ts) all read
 * them from here, so a new setting is written here once. Nearly a leaf: it imports only the
 * allowlist's own schema (network/allowlist.ts, which imports nothing above it) and `once`, so
 * options.ts and the store can use it.
 */
import * as v from "valibot";
import { isAbsolute, normalize } from "node:path";
import { once } from "../platform/lazy.ts";
import { allowSettingSchema, NETWORK_FORMS } from "./network/allowlist.ts";

/** How workloads are confined: not at all (the default), or inside the platform's sandbox. */
const ISOLATIONS = ["none", "sandbox"] as const;
/** A sandboxed workload's network named by a word: the host's, or none. An allowlist is the setting's object form (network/allowlist.ts). */
const NETWORKS = ["host", "none"] as const;

/** The network setting as a schema: one of NETWORKS, or `{"allow": [entries]}` (entries in canonical spelling). */
function networkSchema(message?: (issue: v.BaseIssue<unknown>) => string) {
  return v.union([v.picklist(NETWORKS), allowSettingSchema()], message);
}

/**
 * What a workspace keeps of the settings it was created with (store/workspaces.ts): no sandbox,
 * or the sandbox with its settings. Objects, not strict ones: `ls --json` of a host of a later
 * patch version may add fields, which are left out (operator/views.ts). Built on first use:
 * only a record's write and `ls` validate against it, and building it (the allowlist's schema
 * with it) at evaluation cost every inspect and exec ~0.3 ms (bench/README.md, "Trimming each
 * command's modules").
 */
export const sandboxSettings = once(() =>
  v.variant("isolation", [
    v.object({ isolation: v.literal("none") }),
    v.object({ isolation: v.literal("sandbox"), network: networkSchema(), sandboxReadOnly: v.array(v.string()), sandboxReadWrite: v.array(v.string()) }),
  ]),
);

/** The recorded settings: `{ isolation: "none" }`, or the sandbox with its network and paths. */
export type RecordedIsolation = v.InferOutput<ReturnType<typeof sandboxSettings>>;
/** The settings of a sandboxed workspace. */
export type Sandboxed = Extract<RecordedIsolation, { isolation: "sandbox" }>;
export type Network = Sandboxed["network"];

/** The sandbox settings' part of the runtime options, defaults filled in. */
export type SandboxOptions = Omit<Sandboxed, "isolation"> & { isolation: RecordedIsolation["isolation"] };

/** What an option's message is built from: its name and what it must be (options.ts mustBe, which never quotes a value). */
type MustBe = (name: string, what: string) => (issue: v.BaseIssue<unknown>) => string;
/** An option's schema, built the first time a map carries it (options.ts given). */
type Given = <S extends v.GenericSchema>(build: () => S) => v.LazySchema<S>;

/**
 * The network option's message: the allow object's own when the value failed inside it (an
 * issue with a path: the list, an entry's position and what a good one looks like, an unknown
 * key), else the general one.
 */
function networkMessage(mustBe: MustBe) {
  const general = mustBe("network", NETWORK_FORMS);
  return (issue: v.BaseIssue<unknown>) => issue.issues?.find((inner) => inner.path !== undefined)?.message ?? general(issue);
}

/** Whether `network` is an allowlist (the setting's object form). */
export function isAllowlist(network: Network): network is Extract<Network, { allow: string[] }> {
  return typeof network === "object";
}

/** A list of absolute, normalized paths (no `..`, `.`, `//` or trailing `/`), default []. */
function absolutePaths(name: string, mustBe: MustBe) {
  const message = mustBe(name, "a list of absolute paths (normalized, without NUL)");
  return v.array(
    v.pipe(
      v.string(message),
      v.check((path) => isAbsolute(path) && !path.includes("\0") && normalize(path) === path && (path === "/" || !path.endsWith("/")), message),
    ),
    message,
  );
}

/** The options' schema entries of the sandbox settings, in the order options.ts lists them. */
export function sandboxOptionEntries(given: Given, mustBe: MustBe) {
  return {
    /** `sandbox`: every workload runs under bubblewrap (macOS: sandbox-exec); `none` runs it as the daemon's user, unconfined. */
    isolation: v.optional(given(() => v.picklist(ISOLATIONS, mustBe("isolation", `"none" or "sandbox"`)))),
    /** Under the sandbox: `host` shares the host's network, `none` gives the workload no network at all, `{"allow": [...]}` only what the list names. */
    network: v.optional(given(() => networkSchema(networkMessage(mustBe)))),
    /** Under the sandbox: more host paths the workload sees read-only, at the same path. */
    sandboxReadOnly: v.optional(given(() => absolutePaths("sandboxReadOnly", mustBe))),
    /** Under the sandbox: more host paths the workload sees read-write, at the same path. */
    sandboxReadWrite: v.optional(given(() => absolutePaths("sandboxReadWrite", mustBe))),
  };
}

/** The sandbox settings as given in an options map, each key optional. */
type GivenSandboxOptions = { [K in keyof ReturnType<typeof sandboxOptionEntries>]?: v.InferOutput<ReturnType<typeof sandboxOptionEntries>[K]> };

/** The sandbox settings of `given` with every default filled in (the options table of docs/operators.md lists them). */
export function sandboxDefaults(given: GivenSandboxOptions): SandboxOptions {
  return {
    isolation: given.isolation ?? "none",
    network: given.network ?? "host",
    sandboxReadOnly: given.sandboxReadOnly ?? [],
    sandboxReadWrite: given.sandboxReadWrite ?? [],
  };
}

/** What `options` asks for, in the form a workspace records. */
export function requestedIsolation(options: SandboxOptions): RecordedIsolation {
  if (options.isolation !== "sandbox") return { isolation: "none" };
  const network = isAllowlist(options.network) ? { allow: [...options.network.allow] } : options.network;
  return { isolation: "sandbox", network, sandboxReadOnly: [...options.sandboxReadOnly], sandboxReadWrite: [...options.sandboxReadWrite] };
}

/** The recorded settings of a sandboxed workspace as its JSON column holds them: every field but `isolation`, in the schema's order. */
export function settingsColumn(settings: Sandboxed): string {
  const { isolation: _, ...fields } = v.parse(sandboxSettings().options[1], settings);
  return JSON.stringify(fields);
}

/** The recorded settings of a sandboxed workspace, back from its JSON column (written by settingsColumn). */
export function fromSettingsColumn(json: string | null): Sandboxed {
  return { isolation: "sandbox", ...(JSON.parse(json ?? "{}") as Omit<Sandboxed, "isolation">) };
}
