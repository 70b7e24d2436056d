/**
 * git on a workspace's private git directory (P), run the only way the runtime ever runs it:
 * inside a sandbox of its own, "the jail". P is its only writable path, the user's objects are
 * read-only, there is no network and no environment of the daemon's. Whatever P's config, hooks
 * or alternates say (a workload wrote them) runs there and nowhere else; what comes out is
 * stdout, which callers parse as ref values only, or, for a fetch into the user's repository,
 * a pack the receiving git checks (fetch.fsckObjects).
 */
import { posixQuote } from "../../shell-quote.ts";
import { lazyChildProcess } from "../../platform/lazy.ts";
import { bwrapArguments } from "../bwrap.ts";
import { filesToShow, type Overlay, type SandboxView } from "../view.ts";
import { sandboxTool } from "../tool.ts";
import { gitPath } from "../../workspace/git-environment.ts";
import { objectOverlays, USER_OBJECTS, type PrivateGitPaths, type UserGit } from "./private-git.ts";

/** The jail's whole environment: no variable of the daemon's reaches what P's config runs. */
const JAIL_ENV: Record<string, string> = {
  PATH: "/usr/bin:/bin",
  HOME: "/nonexistent",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  LC_ALL: "C",
};

/** What a jailed command printed, and how it ended. */
export interface JailResult {
  ok: boolean;
  stdout: string;
  /** A short account of a failure (its stderr, or the timeout). */
  problem: string;
}

let gitFiles: string[] | undefined;

/** git and its exec path, shown read-only when /usr does not already hold them. */
function gitInstallation(): string[] {
  if (gitFiles) return gitFiles;
  const git = gitPath();
  const execPath = lazyChildProcess().spawnSync(git, ["--exec-path"], { encoding: "utf8", env: JAIL_ENV }).stdout?.trim();
  gitFiles = [git, ...(execPath ? [execPath] : [])];
  return gitFiles;
}

/** The jail's view: P read-write at its own path, the user's objects read-only, `extra` binds. */
function jailView(user: UserGit, paths: PrivateGitPaths, extra: Overlay[]): SandboxView {
  const view: SandboxView = { root: null, readWrite: [], readOnly: [], network: "none", overlays: [{ source: paths.dir, target: paths.dir, writable: true }, ...objectOverlays(user), ...extra] };
  view.readOnly.push(...filesToShow(gitInstallation(), view));
  return view;
}

/**
 * Runs `argv` (git, or /bin/sh for a copy) in the jail with `input` on its stdin and the host
 * files of `extra` shown read-only at their targets; bounded by `timeoutMs` (SIGKILL, and with
 * bwrap's death everything inside it).
 */
export function runInJail(user: UserGit, paths: PrivateGitPaths, argv: string[], timeoutMs: number, input = "", extra: Overlay[] = []): JailResult {
  const command = argv[0] === "git" ? [gitPath(), ...argv.slice(1)] : argv;
  const result = Bun.spawnSync({
    cmd: [sandboxTool(), ...bwrapArguments(jailView(user, paths, extra)), "--", ...command],
    env: JAIL_ENV,
    stdin: new TextEncoder().encode(input),
    stdout: "pipe",
    stderr: "pipe",
    timeout: timeoutMs,
    killSignal: "SIGKILL",
  });
  if (result.exitCode === 0) return { ok: true, stdout: result.stdout.toString(), problem: "" };
  const problem = result.exitedDueToTimeout ? `did not finish within ${timeoutMs} ms` : result.stderr.toString().trim().split("\n").slice(-3).join("; ") || `exit ${result.exitCode}`;
  return { ok: false, stdout: result.stdout.toString(), problem };
}

/**
 * The `--upload-pack` command with which host git fetches from P: git-upload-pack in the jail,
 * with the jail's environment and only GIT_PROTOCOL of the fetching git's (host git appends P's
 * path, which is not used). `exec` all the way, so bwrap's parent is that git and dies with it.
 *
 * upload-pack never reads P itself, where a workload still running could make any file a FIFO
 * (an open that never returns: the exec's exit would wait for options.gitTimeoutMs) or set
 * what upload-pack does in P's config. It reads `paths.out`, built in the same jail: P's
 * shallow file and objects linked (no workload can reach that directory, and a hard link keeps
 * a file's type), refused if anything there is not a file or directory, with a config and
 * alternates of the runtime's own, and as its only refs and HEAD those the runtime wrote in
 * `paths.out/want` (the values it read and checked): what it advertises is exactly what the
 * caller fetches, however many refs P has.
 */
export function uploadPackCommand(user: UserGit, paths: PrivateGitPaths, objectFormat: string): string {
  const env = Object.entries(JAIL_ENV).map(([key, value]) => posixQuote(`${key}=${value}`));
  const out = `${paths.out}/r`;
  const want = `${paths.out}/want`;
  const config = `[core]\n\trepositoryformatversion = ${objectFormat === "sha1" ? 0 : 1}\n\tbare = true\n${objectFormat === "sha1" ? "" : `[extensions]\n\tobjectformat = ${objectFormat}\n`}`;
  const script = [
    "set -e",
    `rm -rf ${posixQuote(out)} && mkdir ${posixQuote(out)} && cd ${posixQuote(paths.dir)}`,
    `if [ -e shallow ] || [ -L shallow ]; then cp -a shallow ${posixQuote(out)}/; fi`,
    `cp -al objects ${posixQuote(out)}/ && mkdir ${posixQuote(out)}/refs && cp ${posixQuote(want)}/HEAD ${posixQuote(want)}/packed-refs ${posixQuote(out)}/`,
    `odd=$(find ${posixQuote(out)} ! -type f ! -type d -print | head -1)`,
    `if [ -n "$odd" ]; then echo "the workspace's git directory holds $odd, which is not a file or directory: not read" >&2; exit 1; fi`,
    `rm -f ${posixQuote(out)}/objects/info/alternates && echo ${USER_OBJECTS} > ${posixQuote(out)}/objects/info/alternates`,
    `printf '${config}' > ${posixQuote(out)}/config`,
    `exec ${posixQuote(gitPath())} upload-pack ${posixQuote(out)}`,
  ].join("\n");
  // P and paths.out under one mount: a hard link cannot cross mount points. Nothing of the workload's runs here.
  const view = jailView(user, paths, [{ source: paths.storage, target: paths.storage, writable: true }]);
  const jail = [sandboxTool(), ...bwrapArguments(view), "--", "/bin/sh", "-c", script, "sh"].map(posixQuote);
  return `exec /usr/bin/env -i ${env.join(" ")} GIT_PROTOCOL="$GIT_PROTOCOL" ${jail.join(" ")}`;
}
