/**
 * The remote side of source shipping (see source.ts): a mirror repository per daemon-side
 * repository under `<home>/mirrors/<key>`, and a seed directory per paseo.json source under
 * `<home>/seeds/<key>`. Both are caches shared by the workspaces made from them; destroy
 * never removes them (a worktree's branch lives in the mirror, like in the user's repository).
 *
 * The mirror is a normal repository whose working tree stays empty: the remote create makes its
 * worktrees (branch / checkout placements) or a private clone (existing placements) from it.
 * Each shipment sets every shipped ref, except a branch checked out by one of its worktrees:
 * that one may hold the agent's commits and is never moved under it. Nothing is pruned.
 */
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Database } from "bun:sqlite";
import { gitRead, gitRun, type ChildTracker } from "../workspace/git.ts";
import { gitEnvironment, gitPath, type GitSettings } from "../workspace/git-environment.ts";
import { repoGuard } from "../workspace/lock.ts";
import type { ReceiveHeader } from "./wire.ts";
import { homeEntry } from "../store/home.ts";

/** Where shipped refs land first: our own namespace, then copied to their real names. */
const INCOMING = "refs/paseo-host-runtime/incoming";

/** A mirror update belongs to no workspace: nobody takes it over, git's gate watchdog ends git if we die. */
const UNTRACKED: ChildTracker = { started: () => {}, finished: () => {} };

/** A remote-side name: 32 hex digits (source.ts sourceKey). */
export function checkKey(key: string, what: string): void {
  if (!/^[0-9a-f]{32}$/.test(key)) throw new Error(`${what} must be 32 lowercase hex digits, got ${JSON.stringify(key)}`);
}

/**
 * Makes the mirror `key` hold the bundle at `bundlePath` (already written) and the header's
 * HEAD; serialized per mirror among the processes of this home. Returns the mirror path.
 */
export async function updateMirror(db: Database, home: string, key: string, header: NonNullable<ReceiveHeader["repository"]>, bundlePath: string, timeoutMs: number): Promise<string> {
  // Only the bundle file is read: the "file" transport, nothing else; git's own watchdog ends it if we die.
  const git: GitSettings = { policy: { protocols: ["file"], timeoutMs } };
  const mirror = join(homeEntry(home, "mirrors"), key);
  mkdirSync(homeEntry(home, "mirrors"), { recursive: true, mode: 0o700 });
  return await repoGuard(db)(mirror, async () => {
    if (!existsSync(join(mirror, ".git"))) await gitRun(home, ["init", "--quiet", mirror], UNTRACKED, git);
    await gitRun(mirror, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", bundlePath, `+refs/*:${INCOMING}/*`, `+HEAD:${INCOMING}-HEAD`], UNTRACKED, git);
    setShippedRefs(mirror);
    if (header.branch !== "") gitRead(mirror, ["symbolic-ref", "HEAD", `refs/heads/${header.branch}`]);
    else gitRead(mirror, ["update-ref", "--no-deref", "HEAD", header.commit]);
    for (const remote of header.remotes) gitRead(mirror, ["config", `remote.${remote.name}.url`, remote.url]);
    if (header.prefix !== "") mkdirSync(join(mirror, header.prefix), { recursive: true });
    return mirror;
  });
}

/** Copies every incoming ref to its real name (one transaction), then drops the incoming ones. */
function setShippedRefs(mirror: string): void {
  const busy = checkedOutBranches(mirror);
  const lines: string[] = [];
  const incoming = gitRead(mirror, ["for-each-ref", "--format=%(objectname) %(refname)", `${INCOMING}/`, `${INCOMING}-HEAD`]);
  for (const entry of incoming.split("\n").filter(Boolean)) {
    const [sha, ref] = entry.split(" ") as [string, string];
    lines.push(`delete ${ref}\n`);
    if (!ref.startsWith(`${INCOMING}/`)) continue;
    const target = `refs/${ref.slice(INCOMING.length + 1)}`;
    if (!busy.has(target)) lines.push(`update ${target} ${sha}\n`);
  }
  const stdin = lines.join("");
  const result = Bun.spawnSync({ cmd: [gitPath(), "update-ref", "--stdin"], cwd: mirror, env: gitEnvironment(), stdin: Buffer.from(stdin), stdout: "ignore", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`git update-ref in ${mirror} failed: ${result.stderr.toString().trim()}`);
}

/** Branches checked out by a linked worktree of the mirror (its own empty checkout aside). */
function checkedOutBranches(mirror: string): Set<string> {
  const busy = new Set<string>();
  const blocks = gitRead(mirror, ["worktree", "list", "--porcelain"]).split("\n\n").slice(1);
  for (const block of blocks) {
    const branch = /^branch (.+)$/m.exec(block)?.[1];
    if (branch) busy.add(branch);
  }
  return busy;
}

/** Writes (or removes) the seed directory's paseo.json. Returns the directory. */
export function updateSeed(home: string, key: string, content: string | null): string {
  const dir = join(homeEntry(home, "seeds"), key);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, "paseo.json");
  if (content === null) rmSync(path, { force: true });
  else writeFileSync(path, Buffer.from(content, "base64"), { mode: 0o600 });
  return dir;
}

/** Streams the rest of stdin (after the header) into a new file; returns its size. */
export async function saveRest(first: Uint8Array, rest: { read(): Promise<{ done: boolean; value?: Uint8Array }> }, path: string): Promise<number> {
  const fd = openSync(path, "w", 0o600);
  let total = 0;
  const put = (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    total += bytes.length;
  };
  try {
    put(first);
    for (;;) {
      const { done, value } = await rest.read();
      if (done || !value) break;
      put(value);
    }
  } finally {
    closeSync(fd);
  }
  return total;
}
