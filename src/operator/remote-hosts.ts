/**
 * What operator commands see of a remote runtime, host by host. A host's own binary runs its
 * operator command (`ls`, `ps`, `logs`) over the runtime's ssh transport, with the home and owner
 * the hosts get (options.remote; remote/context.ts), and answers JSON: decoded as strict UTF-8
 * and checked against views.ts, because it is other people's bytes. A host that does not
 * answer is a finding among the others, never the end of a view. Nothing here changes anything:
 * what does goes through the runtime's own protocol operations (common.ts runOperation).
 */
import type * as v from "valibot";
import { diagnose, withoutProgramName } from "../output.ts";
import { operationArgv0, printJson } from "./common.ts";
import { decodeOwnOutput } from "../protocol/utf8.ts";
import { withExistingStore } from "../store/db.ts";
import { missingHomeIn } from "../store/home.ts";
import { placementsOf } from "../store/placements.ts";
import { hostUrl, remoteContext, remoteOwner, type RemoteContext } from "../remote/context.ts";
import { knownHosts, routeWorkspace } from "../remote/placement.ts";
import { SSH_FAILED, firstLine, runRemote } from "../remote/ssh.ts";
import { parseWire } from "../remote/wire.ts";
import type { RemoteHost } from "../ssh-url.ts";
import type { Selection } from "./selection.ts";
import { ExecutionList, WorkspaceList, type WorkspaceSummary } from "./views.ts";

/** A remote runtime as its views reach it. */
export interface RemoteRuntime {
  ctx: RemoteContext;
  /** Every host it may have workspaces on: the configured ones, then any only a placement record names. */
  hosts: RemoteHost[];
  /** The owner its hosts stamp (remote.owner, else `<owner>@<this host>`). */
  owner: string;
  /** The runtime home on the hosts (remote.stateDirectory), or null: each host's default. */
  home: string | null;
}

/** The remote runtime `chosen` names (its options validated here; the local placements read, never created). */
export async function remoteRuntime(chosen: Selection): Promise<RemoteRuntime> {
  // Fingerprinted as the runtime's own operations will be, whatever name this command was typed as.
  const ctx = remoteContext(chosen.remote!, chosen.options, operationArgv0());
  const recorded = await withExistingStore(ctx.options, ({ db }) => placementsOf(db, ctx.options.owner), () => new Map<string, string>());
  return { ctx, hosts: knownHosts(ctx, recorded.values()), owner: remoteOwner(ctx.options, ctx.remote), home: ctx.remote.stateDirectory ?? null };
}

/** One host's answer: the value, or why there is none. */
export interface HostAnswer<T> {
  host: RemoteHost;
  /** The host's URL as the configuration writes it. */
  url: string;
  value: T | null;
  /** Why it gave no answer, or null. */
  problem: string | null;
  /** The host's runtime home, when the host says it does not exist yet (nothing was created there: not a failure). */
  missingHome: string | null;
}

/** `words` of this runtime's own binary on `host`, in the hosts' home, for the hosts' owner unless `anyOwner`. */
export function hostWords(runtime: RemoteRuntime, host: RemoteHost, words: readonly string[], anyOwner = false): string[] {
  return [host.binary, ...words, ...(anyOwner ? [] : ["--owner", runtime.owner]), ...(runtime.home === null ? [] : ["--home", runtime.home])];
}

/** Why a remote command that ended with `status` gave no answer, in its own words when it said any. */
export function failure(host: RemoteHost, status: number, stderr: string): string {
  const ssh = firstLine(stderr);
  if (status === SSH_FAILED) return `not reached over ssh (exit 255${ssh === null ? "" : `: ${ssh}`})`;
  if (status === 127) return `the remote shell could not run ${JSON.stringify(host.binary)} (exit 127)`;
  const said = stderr
    .split("\n")
    .map((line) => withoutProgramName(line).trim())
    .filter((line) => line !== "");
  return said.length > 0 ? said.join("; ") : `exit ${status}`;
}

/** Runs `words` (this runtime's own command, `--json`) on `host`: its answer, checked against `schema`. */
export async function askHost<S extends v.GenericSchema>(runtime: RemoteRuntime, host: RemoteHost, words: readonly string[], schema: S, what: string): Promise<HostAnswer<v.InferOutput<S>>> {
  const url = hostUrl(runtime.ctx, host);
  try {
    const result = await runRemote(host, runtime.ctx.settings, words, null, { stderr: "keep" });
    if (result.status !== 0) {
      const home = missingHomeIn(result.stderrHead);
      return { host, url, value: null, problem: home === null ? failure(host, result.status, result.stderrHead) : null, missingHome: home };
    }
    const label = `${what} of ${host.key}`;
    return { host, url, value: parseWire(schema, decodeOwnOutput(result.stdout, label), label), problem: null, missingHome: null };
  } catch (error) {
    return { host, url, value: null, problem: (error as Error).message, missingHome: null };
  }
}

/** askHost on every host of the runtime at once, in the runtime's host order. */
export async function askHosts<S extends v.GenericSchema>(runtime: RemoteRuntime, words: (host: RemoteHost) => string[], schema: S, what: string): Promise<HostAnswer<v.InferOutput<S>>[]> {
  return await Promise.all(runtime.hosts.map((host) => askHost(runtime, host, words(host), schema, what)));
}

/** Says on stderr which hosts gave no answer, and why; true when every one answered. */
export function reportHosts(command: string, answers: readonly HostAnswer<unknown>[]): boolean {
  for (const answer of answers) if (answer.problem !== null) diagnose(`${command}: ${answer.url}: ${answer.problem}`);
  return answers.every((answer) => answer.problem === null);
}

/** Each host as a view's `--json` names it: its URL, its home, whether that exists, why it gave no answer. */
function hostStates(answers: readonly HostAnswer<{ home: string }>[]): { host: string; home: string | null; exists: boolean | null; error: string | null }[] {
  return answers.map((answer) => ({
    host: answer.url,
    home: answer.value?.home ?? answer.missingHome,
    exists: answer.value !== null ? true : answer.missingHome !== null ? false : null,
    error: answer.problem,
  }));
}

/** The items of every host that answered, each with its host: its key (tables) and URL (`--json`). */
export function hostItems<V, T>(answers: readonly HostAnswer<V>[], items: (value: V) => readonly T[]): { host: string; url: string; item: T }[] {
  return answers.flatMap((answer) => (answer.value === null ? [] : items(answer.value)).map((item) => ({ host: answer.host.key, url: answer.url, item })));
}

/** A remote view's `--json`: the hosts' owner, each host's state, and under `key` every item with its host's URL. */
export function printHostItems(runtime: RemoteRuntime, answers: readonly HostAnswer<{ home: string }>[], key: string, items: readonly { url: string; item: object }[]): void {
  printJson({ owner: runtime.owner, hosts: hostStates(answers), [key]: items.map(({ url, item }) => ({ host: url, ...item })) });
}

/** Every workspace of the hosts' owner on every host (`ls --json` there). */
export async function hostWorkspaces(runtime: RemoteRuntime): Promise<HostAnswer<v.InferOutput<typeof WorkspaceList>>[]> {
  return await askHosts(runtime, (host) => hostWords(runtime, host, ["ls", "--json"]), WorkspaceList, "ls --json");
}

/** Where one workspace lives, what its host records of it (any owner), and its live executions there. */
export interface Located {
  host: RemoteHost;
  url: string;
  record: WorkspaceSummary | null;
  liveExecIds: string[];
  /** Why the host could not tell, or null. */
  problem: string | null;
  /** The ids of the hosts' owner's workspaces on that host. */
  ownerIds: string[];
}

/** Asks the host a workspace is routed to (its placement, else its hash host), as the runtime's operations go there. */
export async function locate(runtime: RemoteRuntime, workspaceId: string): Promise<Located> {
  const host = routeWorkspace(runtime.ctx, workspaceId);
  const [listed, live] = await Promise.all([
    askHost(runtime, host, hostWords(runtime, host, ["ls", "--json"], true), WorkspaceList, "ls --json"),
    askHost(runtime, host, hostWords(runtime, host, ["ps", "--json", "--workspace-id", workspaceId], true), ExecutionList, "ps --json"),
  ]);
  const problem = listed.problem ?? live.problem;
  return {
    host,
    url: listed.url,
    record: listed.value?.workspaces.find((w) => w.workspaceId === workspaceId) ?? null,
    liveExecIds: live.value?.executions.map((e) => e.execId) ?? [],
    problem,
    ownerIds: (listed.value?.workspaces ?? []).filter((w) => w.owner === runtime.owner).map((w) => w.workspaceId),
  };
}
