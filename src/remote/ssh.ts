/**
 * The system OpenSSH client, as this runtime uses it: batch mode (never a prompt), no
 * forwarding of any kind, no tty, nothing of ssh's own on stdout, and one shared connection
 * per host (ControlMaster) whose socket lives in a 0700 directory no other user can make
 * (controlDirectory). Every ssh runs with selfEnv's environment: ssh ignores what it leaves
 * out, but a ProxyCommand inherits it, and one may be this binary.
 */
import { lstatSync, mkdirSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { KEEPALIVE_ENV } from "../keepalive.ts";
import { writeAll } from "../output.ts";
import { printableStream } from "../printable.ts";
import { posixQuote } from "../shell-quote.ts";
import { selfEnv } from "../client/self.ts";
import { hasErrno } from "../platform/errno.ts";
import type { RemoteHost } from "../ssh-url.ts";
import { homeEntry } from "../store/home.ts";

/** How this runtime talks to its hosts (from the command line and options.remote). */
export interface SshSettings {
  /** `--ssh-config FILE` (ssh -F): identity, known hosts, proxies; else the user's ~/.ssh/config. */
  configFile: string | null;
  /** Directory of the control sockets; null: no connection reuse (one handshake per call). */
  controlDir: string | null;
  controlPersistSeconds: number;
  connectTimeoutSeconds: number;
  serverAliveIntervalSeconds: number;
  /** A call that shows no progress for this long is ended (IdleWatch). */
  idleTimeoutSeconds: number;
}

/** ssh's exit status for its own failures (connection, authentication, a remote killed by a signal). */
export const SSH_FAILED = 255;

/**
 * The longest control socket path we hand to ssh: sun_path holds 104 bytes on macOS (108 on
 * Linux), and ssh first binds a temporary name 17 characters longer than ControlPath.
 */
const MAX_CONTROL_PATH = 104 - 1 - 17;

/**
 * The control socket of one host: a short hash of everything that selects the connection, so
 * the path fits in a socket address however long the home is (see MAX_CONTROL_PATH).
 */
export function controlPath(dir: string, host: RemoteHost, configFile: string | null): string {
  const name = new Bun.CryptoHasher("sha256").update(`${host.key}\n${configFile ?? ""}`).digest("hex").slice(0, 16);
  return join(dir, name);
}

/** Where the control sockets go; `dir` null: nowhere usable, so no connection reuse, for the reasons given. */
export interface ControlChoice {
  dir: string | null;
  /** Why each place tried was not usable (for the runtime log and `remote doctor`). */
  problems: string[];
}

/**
 * The directory for control sockets, in a place no other user can create first: a directory
 * a squatter made could hold a socket of theirs that ssh would take for our shared connection.
 * 1. `$XDG_RUNTIME_DIR/paseo-host-runtime`, when XDG_RUNTIME_DIR is this user's own 0700
 *    directory (a tmpfs made by the login manager: sockets there never land on NFS);
 * 2. `<home>/ssh`, inside the runtime home (this user's 0700 directory).
 * Each must be short enough for a socket address (MAX_CONTROL_PATH), hold no character ssh
 * reads as a token or separator, and be a real directory (not a symlink) of this user with
 * mode 0700. Neither usable: dir null, and every call runs without reuse (ControlMaster=no).
 * `create` false (remote doctor): only looks; a directory not made yet counts as usable.
 */
export function controlDirectory(home: string, { env = process.env, create = true }: { env?: NodeJS.ProcessEnv; create?: boolean } = {}): ControlChoice {
  const problems: string[] = [];
  const runtimeDir = env.XDG_RUNTIME_DIR;
  if (runtimeDir) {
    const dir = join(runtimeDir, "paseo-host-runtime");
    const problem = !isAbsolute(runtimeDir) ? "XDG_RUNTIME_DIR is not an absolute path" : (privateDirectoryProblem(runtimeDir, "XDG_RUNTIME_DIR", false) ?? usableControlDir(dir, create));
    if (problem === null) return { dir, problems };
    problems.push(problem);
  }
  if (create) mkdirSync(home, { recursive: true, mode: 0o700 });
  const inHome = homeEntry(home, "ssh");
  const problem = usableControlDir(inHome, create);
  if (problem === null) return { dir: inHome, problems };
  problems.push(problem);
  return { dir: null, problems };
}

/** Why `dir` cannot hold control sockets (made 0700 when missing and `create`), or null. */
function usableControlDir(dir: string, create: boolean): string | null {
  if (dir.length + 1 + 16 > MAX_CONTROL_PATH) return `${dir} is too long for a socket address (at most ${MAX_CONTROL_PATH - 17} characters)`;
  if (!/^[A-Za-z0-9_./-]+$/.test(dir)) return `${dir} has characters ssh would read as tokens or separators in ControlPath`;
  if (create) {
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (error) {
      if (!hasErrno(error, ["EEXIST"])) return `cannot create ${dir}: ${(error as Error).message}`;
    }
  }
  return privateDirectoryProblem(dir, "the control socket directory", !create);
}

/** Why `dir` is not a real directory of this user with mode 0700 (`missingIsFine`: or absent), or null. */
function privateDirectoryProblem(dir: string, what: string, missingIsFine: boolean): string | null {
  let stat;
  try {
    stat = lstatSync(dir);
  } catch (error) {
    if (missingIsFine && hasErrno(error, ["ENOENT"])) return null;
    return `${what} ${dir}: ${(error as Error).message}`;
  }
  const uid = process.getuid?.();
  if (stat.isSymbolicLink()) return `${what} ${dir} is a symbolic link (someone else may have made it)`;
  if (!stat.isDirectory()) return `${what} ${dir} is not a directory`;
  if (uid !== undefined && stat.uid !== uid) return `${what} ${dir} belongs to uid ${stat.uid}, not to this user (uid ${uid})`;
  if ((stat.mode & 0o077) !== 0) return `${what} ${dir} has mode ${(stat.mode & 0o777).toString(8)}, not 700`;
  return null;
}

/** ssh's options, before the destination. */
function sshOptions(host: RemoteHost, settings: SshSettings): string[] {
  const o = (option: string) => ["-o", option];
  const args = ["-T", "-x", "-a", "-e", "none"];
  if (settings.configFile !== null) args.push("-F", settings.configFile);
  args.push(
    ...o("BatchMode=yes"),
    ...o("RequestTTY=no"),
    ...o("ClearAllForwardings=yes"),
    ...o("ForwardAgent=no"),
    ...o("ForwardX11=no"),
    ...o("PermitLocalCommand=no"),
    ...o("LogLevel=ERROR"),
    ...o(`ConnectTimeout=${settings.connectTimeoutSeconds}`),
    ...o(`ServerAliveInterval=${settings.serverAliveIntervalSeconds}`),
  );
  if (settings.controlDir !== null && settings.controlPersistSeconds > 0) {
    args.push(...o("ControlMaster=auto"), ...o(`ControlPath=${controlPath(settings.controlDir, host, settings.configFile)}`), ...o(`ControlPersist=${settings.controlPersistSeconds}`));
  } else {
    args.push(...o("ControlMaster=no"), ...o("ControlPath=none"));
  }
  if (host.port !== null) args.push("-p", String(host.port));
  if (host.user !== null) args.push("-l", host.user);
  return args;
}

/** The whole ssh argv running `words` (already the remote program and its arguments) on `host`. */
export function sshArgv(host: RemoteHost, settings: SshSettings, words: readonly string[]): string[] {
  // sshd runs the command through the remote user's POSIX shell; no shell word can hold a NUL.
  if (words.some((word) => word.includes("\0"))) throw new Error("a remote command word must not contain a NUL byte");
  return [sshProgram(), ...sshOptions(host, settings), "--", host.host, words.map(posixQuote).join(" ")];
}

/**
 * Where ssh would log in for `host`: its user, host name and port as ssh's own configuration
 * resolves them (`ssh -G`, which connects to nothing), the host name lower-cased.
 */
export function loginOf(host: RemoteHost, settings: SshSettings): string {
  const result = Bun.spawnSync([sshProgram(), ...sshOptions(host, settings), "-G", "--", host.host], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: selfEnv() });
  if (result.exitCode !== 0) throw new Error(`ssh -G could not resolve ${host.key}: ${firstLine(result.stderr.toString()) ?? `exit ${result.exitCode}`}`);
  const value = (key: string) => result.stdout.toString().split("\n").find((line) => line.startsWith(`${key} `))?.slice(key.length + 1) ?? "";
  return `${value("user")}@${value("hostname").toLowerCase()}:${value("port")}`;
}

/**
 * Refuses `hosts` when two of them are one login written two ways (`ssh://root@h` and `ssh://h`
 * with `User root` in ssh_config, `:22` and no port): each would be reconciled as a host of its
 * own, and each reconcile would destroy on that one machine what the other was told to keep.
 */
export function requireDistinctLogins(hosts: readonly RemoteHost[], settings: SshSettings): void {
  const seen = new Map<string, string>();
  for (const host of hosts) {
    const login = loginOf(host, settings);
    const other = seen.get(login);
    if (other !== undefined) throw new Error(`the hosts ${other} and ${host.key} are one login (${login}, as ssh resolves them): a reconcile of each would destroy what the other keeps there; list that host once in options.remote.hosts (and give its workspaces' records the same spelling)`);
    seen.set(login, host.key);
  }
}

/** Asks the shared connection of `host` (if any) to close: `ssh -O exit`. */
export function closeShared(host: RemoteHost, settings: SshSettings): void {
  Bun.spawnSync([sshProgram(), ...sshOptions(host, settings), "-O", "exit", "--", host.host], { stdin: "ignore", stdout: "ignore", stderr: "ignore", env: selfEnv() });
}

let cachedSsh: string | undefined;

/** The ssh client on PATH. */
export function sshProgram(): string {
  if (cachedSsh) return cachedSsh;
  const found = Bun.which("ssh", { PATH: process.env.PATH ?? "" });
  if (!found) throw new Error(`ssh was not found on PATH (${process.env.PATH ?? "unset"}); install the OpenSSH client (Debian: openssh-client)`);
  cachedSsh = found;
  return found;
}

/** What one remote command printed and how it ended. */
interface RemoteResult {
  /** The remote command's exit status; SSH_FAILED also when ssh itself failed. */
  status: number;
  stdout: Uint8Array;
  /** The start of stderr (ssh's and the remote's), kept for the runtime log. */
  stderrHead: string;
}

/** How much of a remote command's stderr is kept to say why it failed. */
const MAX_STDERR_HEAD = 4096;

/** The first non-empty line of `text` (ssh's reason, when it failed), or null. */
export function firstLine(text: string): string | null {
  return text.split("\n").map((line) => line.trim()).find((line) => line !== "") ?? null;
}

/** A remote call ended for lack of progress (IdleWatch). */
export class RemoteStalled extends Error {
  override name = "RemoteStalled";
}

/**
 * The bound on every remote call: it is ended once nothing came from the remote side (a byte
 * of output, a keepalive: src/keepalive.ts, a mux frame) and nothing it was sent was taken, for
 * settings.idleTimeoutSeconds. ServerAliveInterval cannot see this: the connection is healthy,
 * the remote runtime behind it is not (a hung disk, a stopped process, a wedged NFS home).
 *
 * Once it fired, the caller stops waiting for ssh's pipes to close (`fired`): with a shared
 * connection the master holds the session's descriptors until the remote command ends, and a
 * stalled one never does.
 */
export class IdleWatch {
  #last = performance.now();
  #stalled = false;
  readonly #timer: ReturnType<typeof setInterval>;
  /** Resolves when the call stalled (after `end` ran). */
  readonly fired: Promise<void>;

  /** `end` is called once, when the call stalled; `waitedFor` says what it was waiting for. */
  constructor(
    readonly host: RemoteHost,
    readonly settings: SshSettings,
    readonly waitedFor: string,
    end: () => void,
  ) {
    const limit = settings.idleTimeoutSeconds * 1000;
    let fire = () => {};
    this.fired = new Promise((resolve) => (fire = resolve));
    this.#timer = setInterval(() => {
      if (this.#stalled || performance.now() - this.#last <= limit) return;
      this.#stalled = true;
      this.stop();
      end();
      fire();
    }, Math.min(1000, limit / 4));
  }

  /** Something came from the remote side, or it took what we sent. */
  progress(): void {
    this.#last = performance.now();
  }

  get stalled(): boolean {
    return this.#stalled;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** What the call ends with: the host, what was waited for, the bound. */
  error(): RemoteStalled {
    const seconds = this.settings.idleTimeoutSeconds;
    return new RemoteStalled(
      `${this.host.key} showed no progress for ${seconds} s while this side waited for ${this.waitedFor} (remote.idleTimeoutSeconds); ` +
        "the connection was ended: the remote runtime is stalled (a hung disk or home, a stopped process) or not running",
    );
  }
}

/** How often the remote runtime sends a keepalive: four per idle timeout, 250 ms to 10 s apart. */
export function keepaliveMs(settings: SshSettings): number {
  return Math.min(10_000, Math.max(250, Math.floor((settings.idleTimeoutSeconds * 1000) / 4)));
}

/** `words` of this runtime's own binary, asked to send keepalives on its stdout (src/keepalive.ts). */
export function withKeepalive(words: readonly string[], settings: SshSettings): string[] {
  return ["env", `${KEEPALIVE_ENV}=${keepaliveMs(settings)}`, ...words];
}

/** `chunk` without keepalive NULs (none of our JSON answers holds a raw NUL). */
export function withoutKeepalives(chunk: Uint8Array): Uint8Array {
  return chunk.includes(0) ? chunk.filter((byte) => byte !== 0) : chunk;
}

/**
 * Copies a remote command's stderr to ours as it comes (unless `relay` is false: a caller that
 * shows it escaped), keeping its start; each chunk is progress.
 */
export async function relayStderr(stream: ReadableStream<Uint8Array>, watch: IdleWatch, relay = true): Promise<string> {
  const head: Uint8Array[] = [];
  let kept = 0;
  // The host's words (or its login shell's) reach a daemon's log or a person's terminal: escaped.
  const shown = printableStream();
  for await (const chunk of stream) {
    watch.progress();
    if (relay) writeAll(2, shown(chunk));
    if (kept < MAX_STDERR_HEAD) {
      head.push(chunk.subarray(0, MAX_STDERR_HEAD - kept));
      kept += head.at(-1)!.length;
    }
  }
  return new TextDecoder().decode(Buffer.concat(head));
}

/** The most a lifecycle operation may print; real answers are a few hundred bytes. */
const MAX_STDOUT = 4 * 1024 * 1024;

/** How runRemote treats the remote command's output. */
interface RemoteOutput {
  /** "relay" (default): stderr is copied to ours as it comes; "keep": only its start is kept (stderrHead). */
  stderr?: "relay" | "keep";
  /** Each stdout chunk as it comes (keepalives dropped), instead of collecting stdout. */
  onStdout?: (chunk: Uint8Array) => void;
}

/**
 * Runs `words` on `host` with `stdin` (or none), collecting stdout (bounded); stderr (ssh's and
 * the remote's) is copied to ours as it comes, its start kept for the runtime log. Bounded by
 * IdleWatch: this runtime's own binary (words[0] is the host's binary) sends keepalives while
 * it works, which are dropped from stdout. Throws RemoteStalled when the call stalled.
 */
export async function runRemote(host: RemoteHost, settings: SshSettings, words: readonly string[], stdin: Uint8Array | null, output: RemoteOutput = {}): Promise<RemoteResult> {
  const ours = words[0] === host.binary;
  const proc = Bun.spawn(sshArgv(host, settings, ours ? withKeepalive(words, settings) : words), {
    stdin: stdin === null ? "ignore" : stdin,
    stdout: "pipe",
    stderr: "pipe",
    env: selfEnv(),
  });
  const watch = new IdleWatch(host, settings, `\`${(ours ? words.slice(1, 2) : words.slice(0, 1)).join(" ")}\` to answer`, () => proc.kill("SIGKILL"));
  const stderr = relayStderr(proc.stderr, watch, output.stderr !== "keep");
  const chunks: Uint8Array[] = [];
  const stdout = (async () => {
    let total = 0;
    for await (const chunk of proc.stdout) {
      watch.progress();
      const bytes = ours ? withoutKeepalives(chunk) : chunk;
      if (output.onStdout) {
        if (bytes.length > 0) output.onStdout(bytes);
        continue;
      }
      total += bytes.length;
      if (total > MAX_STDOUT) {
        proc.kill("SIGKILL");
        throw new Error(`${host.key} printed more than ${MAX_STDOUT} bytes on stdout`);
      }
      chunks.push(bytes);
    }
  })();
  try {
    await Promise.race([Promise.all([stdout, proc.exited, stderr]), watch.fired]);
  } finally {
    watch.stop();
  }
  if (watch.stalled) throw watch.error();
  return { status: proc.exitCode ?? SSH_FAILED, stdout: Buffer.concat(chunks), stderrHead: await stderr };
}
