/**
 * Sources that name the daemon's machine, made available on the remote host before its create:
 * - a host-directory source travels as its repository's committed content (`git bundle` of
 *   HEAD, branches, tags and remote-tracking refs) into a mirror repository in the remote home;
 *   the remote create then places branch / checkout / worktree placements in that mirror, and
 *   an `existing` placement becomes a private clone of it (nothing uncommitted exists there);
 * - `seedPaseoConfigFrom` names a local directory: its paseo.json (if any) travels too.
 * Both go over the same ssh connection as the operations (ControlMaster), on ssh's stdin.
 */
import { lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CreateInput } from "../protocol/index.ts";
import { PATH_MISSING, tolerating } from "../platform/errno.ts";
import { gitQuery } from "../workspace/git.ts";
import { gitEnvironment, gitPath } from "../workspace/git-environment.ts";
import { hostSourceDirectory, isDirectorySource } from "../workspace/input.ts";
import { currentBranch, headCommit, repoInfo } from "../workspace/repo.ts";
import type { RemoteContext } from "./context.ts";
import { remoteOwner } from "./context.ts";
import { IdleWatch, SSH_FAILED, relayStderr, sshArgv, withKeepalive, withoutKeepalives } from "./ssh.ts";
import { selfEnv } from "../client/self.ts";
import type { RemoteHost } from "../ssh-url.ts";
import { Received, isShareableUrl, parseWire, type ReceiveHeader } from "./wire.ts";

/** A paseo.json larger than this is not a configuration file. */
const MAX_SEED_BYTES = 1024 * 1024;

/** A stable remote-side name: sha256 of who ships it (remote owner) and what (a local path). */
function sourceKey(ctx: RemoteContext, localPath: string): string {
  return new Bun.CryptoHasher("sha256").update(`${remoteOwner(ctx.options, ctx.remote)}\n${localPath}`).digest("hex").slice(0, 32);
}

/**
 * Ships what the create input names on this machine, and returns the input naming the copies
 * (in the request's dialect: only paths change). An `existing` placement of a shipped
 * repository becomes a private clone there (context.ts sets hostDirectory "clone"): the
 * mirror's working tree is empty, nothing uncommitted travels to be adopted.
 */
export async function shipSources(ctx: RemoteContext, host: RemoteHost, input: CreateInput): Promise<CreateInput> {
  const source = input.project.source;
  const repo = isDirectorySource(source) ? localRepository(source.path) : null;
  const seedFrom = input.seedPaseoConfigFrom;
  if (!repo && seedFrom === undefined) return input;
  const flags: string[] = [];
  if (repo) flags.push("--mirror", sourceKey(ctx, repo.commonDir));
  if (seedFrom !== undefined) flags.push("--seed", sourceKey(ctx, seedFrom));
  const header: ReceiveHeader = {
    protocolVersion: 1,
    options: ctx.remoteSideOptions,
    repository: repo ? { branch: repo.branch, commit: repo.commit, prefix: repo.prefix, remotes: repo.remotes } : null,
    seed: seedFrom === undefined ? null : { content: readSeed(seedFrom) },
  };
  const received = await receive(ctx, host, flags, header, repo?.toplevel ?? null);
  const shipped = { ...input } as CreateInput;
  if (repo) {
    const path = repo.prefix === "" ? received.mirror! : join(received.mirror!, repo.prefix);
    shipped.project = { ...input.project, source: { ...source, path } } as CreateInput["project"];
  }
  if (seedFrom !== undefined) shipped.seedPaseoConfigFrom = received.seed!;
  return shipped;
}

interface LocalRepository {
  toplevel: string;
  commonDir: string;
  prefix: string;
  branch: string;
  commit: string;
  remotes: { name: string; url: string }[];
}

/** The daemon-side repository of a host-directory source; only committed content can travel. */
function localRepository(path: string): LocalRepository {
  const real = hostSourceDirectory(path);
  const info = repoInfo(real);
  if (!info) throw new Error(`input.project.source.path ${path} is not in a git repository: a remote workspace gets the committed content of a repository, and a plain directory has none`);
  const commit = headCommit(info.toplevel);
  if (!commit) throw new Error(`${info.toplevel} has no commit yet: only committed content travels to a remote host`);
  return { ...info, branch: currentBranch(info.toplevel), commit, remotes: shareableRemotes(info.toplevel) };
}

/** The repository's remotes that mean the same thing on another machine: network URLs without credentials. */
function shareableRemotes(toplevel: string): { name: string; url: string }[] {
  // git config --get-regexp answers "none" by exiting 1 (gitQuery's null); any other failure is thrown.
  const text = gitQuery(toplevel, ["config", "--get-regexp", "^remote\\..*\\.url$"]);
  if (text === null) return [];
  const remotes: { name: string; url: string }[] = [];
  for (const line of text.split("\n")) {
    const match = /^remote\.([A-Za-z0-9._-]+)\.url (.+)$/.exec(line);
    if (match && isShareableUrl(match[2]!)) remotes.push({ name: match[1]!, url: match[2]! });
  }
  return remotes;
}

/** paseo.json of `dir` (base64), or null when there is none. */
function readSeed(dir: string): string | null {
  const path = join(dir, "paseo.json");
  return tolerating(PATH_MISSING, null, () => {
    const stat = lstatSync(path);
    if (!stat.isFile()) return null;
    if (stat.size > MAX_SEED_BYTES) throw new Error(`${path} is larger than ${MAX_SEED_BYTES} bytes`);
    return readFileSync(path).toString("base64");
  });
}

/**
 * Runs the remote `receive-source`: the header line, then (for a repository) the bundle that
 * `git bundle create -` streams, straight into ssh's stdin.
 */
async function receive(ctx: RemoteContext, host: RemoteHost, flags: string[], header: ReceiveHeader, toplevel: string | null): Promise<Received> {
  const bundle = toplevel
    ? Bun.spawn([gitPath(), "bundle", "create", "--quiet", "-", "HEAD", "--branches", "--tags", "--remotes"], {
        cwd: toplevel,
        env: gitEnvironment(),
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      })
    : null;
  const line = new TextEncoder().encode(`${JSON.stringify(header)}\n`);
  // Pulled, not pushed: a chunk of the bundle is read only when ssh took the previous one.
  const chunks = bundle?.stdout.getReader();
  let headerSent = false;
  let watch: IdleWatch | null = null;
  const stdin = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // ssh took what came before: the remote side is reading (a slow link is progress too).
      watch?.progress();
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(line);
        return;
      }
      const next = chunks ? await chunks.read() : { done: true as const, value: undefined };
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
  const words = withKeepalive([host.binary, "receive-source", ...flags], ctx.settings);
  const ssh = Bun.spawn(sshArgv(host, ctx.settings, words), { stdin, stdout: "pipe", stderr: "pipe", env: selfEnv() });
  watch = new IdleWatch(host, ctx.settings, "`receive-source` to take the source and answer", () => {
    ssh.kill("SIGKILL");
    bundle?.kill("SIGKILL");
  });
  const done = Promise.all([readAnswer(ssh.stdout, watch), bundle ? new Response(bundle.stderr).text() : Promise.resolve(""), relayStderr(ssh.stderr, watch), ssh.exited]);
  const finished = await Promise.race([done, watch.fired.then(() => null)]);
  watch.stop();
  if (finished === null) throw watch.error();
  const [stdout, gitError] = finished;
  if (bundle && (await bundle.exited) !== 0) throw new Error(`git bundle of ${toplevel} failed (exit ${bundle.exitCode}): ${gitError.trim()}`);
  if (ssh.exitCode !== 0) {
    const why = ssh.exitCode === SSH_FAILED ? "ssh failed (exit 255; its message, if any, is above)" : `exit ${ssh.exitCode}`;
    throw new Error(`shipping the source to ${host.key} failed: ${why}`);
  }
  return parseWire(Received, stdout, `receive-source answer of ${host.key}`);
}

/** receive-source's answer line, keepalives dropped; every chunk is progress. */
async function readAnswer(stream: ReadableStream<Uint8Array>, watch: IdleWatch): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) {
    watch.progress();
    chunks.push(withoutKeepalives(chunk));
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
