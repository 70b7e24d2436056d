/**
 * Which git runs and with what environment: the runtime's own, minus everything that would
 * point git at another repository, plus the operator's bounds (allowed transports, no prompts,
 * stall detection) and, for one URL's git processes, that URL's credential.
 */
import { DEFAULT_GIT_TIMEOUT_MS } from "../options.ts";

/**
 * Variables that redirect git to another repository, index or object store (the list of
 * `git rev-parse --local-env-vars` in git 2.39, plus discovery limits). Inherited from a daemon
 * that itself runs inside a git hook, they would make us act on the wrong repository.
 */
const REDIRECTING = [
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_CONFIG",
  "GIT_CONFIG_PARAMETERS",
  "GIT_CONFIG_COUNT",
  "GIT_OBJECT_DIRECTORY",
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_IMPLICIT_WORK_TREE",
  "GIT_GRAFT_FILE",
  "GIT_INDEX_FILE",
  "GIT_NO_REPLACE_OBJECTS",
  "GIT_REPLACE_REF_BASE",
  "GIT_PREFIX",
  "GIT_INTERNAL_SUPER_PREFIX",
  "GIT_SHALLOW_FILE",
  "GIT_COMMON_DIR",
  "GIT_CEILING_DIRECTORIES",
  "GIT_DISCOVERY_ACROSS_FILESYSTEM",
  "GIT_NAMESPACE",
];

/** The operator's bounds on git: options.allowedGitProtocols and options.gitTimeoutMs. */
interface GitPolicy {
  protocols: readonly string[];
  timeoutMs: number;
}

/**
 * A credential taken out of a git URL. It reaches git only through the environment of the git
 * processes that need it, and only for the URL's own protocol and host (see credentialConfig).
 */
export interface GitCredential {
  protocol: string;
  /** host[:port], exactly as in the URL, which is how git names it to a credential helper. */
  host: string;
  username: string;
  password: string;
}

/** How gitRun runs one git command: the operator's bounds and, for a URL's clone, its credential. */
export interface GitSettings {
  policy: GitPolicy;
  credential?: GitCredential | undefined;
}

/** Git that touches no remote at all (reads, worktree bookkeeping): no transport is allowed. */
export const LOCAL_GIT: GitSettings = { policy: { protocols: [], timeoutMs: DEFAULT_GIT_TIMEOUT_MS } };

/**
 * ssh never asks a question: no password or passphrase prompt, no host-key question (an unknown
 * host fails), and a dead connection is noticed within a minute.
 */
const BATCH_SSH = "ssh -o BatchMode=yes -o ConnectTimeout=30 -o ServerAliveInterval=15 -o ServerAliveCountMax=4";

/**
 * curl gives up on an HTTP transfer that moved less than 1 byte/s for 60 s: a server that
 * stalls. (A slow transfer still makes progress; gitTimeoutMs bounds it as a whole.)
 */
const HTTP_LOW_SPEED = [
  ["http.lowSpeedLimit", "1"],
  ["http.lowSpeedTime", "60"],
] as const;

/**
 * The credential helper for a URL's clone: answers `get` with the credential from its own
 * environment, and only when git asks for the URL's protocol and host (never after a redirect
 * elsewhere); `store` and `erase` do nothing.
 */
const CREDENTIAL_HELPER =
  '!f() { test "$1" = get || return 0; p=; h=; while IFS= read -r l; do case "$l" in ' +
  '"protocol=$PASEO_GIT_CREDENTIAL_PROTOCOL") p=1;; "host=$PASEO_GIT_CREDENTIAL_HOST") h=1;; esac; done; ' +
  'test "$p$h" = 11 || return 0; printf \'username=%s\\npassword=%s\\n\' "$PASEO_GIT_USERNAME" "$PASEO_GIT_PASSWORD"; }; f';

/**
 * The environment git runs with. Never prompts: nobody is there to answer. Only the policy's
 * transports work, enforced by git itself (GIT_ALLOW_PROTOCOL overrides every config file;
 * protocol.allow=never and GIT_PROTOCOL_FROM_USER=0 say the same in config terms).
 */
export function gitEnvironment(settings: GitSettings = LOCAL_GIT, cwd?: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || REDIRECTING.includes(key) || key.startsWith("GIT_CONFIG_KEY_") || key.startsWith("GIT_CONFIG_VALUE_") || key.startsWith("PASEO_GIT_")) continue;
    out[key] = value;
  }
  out.GIT_TERMINAL_PROMPT = "0";
  // An empty GIT_ASKPASS makes git skip core.askPass and SSH_ASKPASS too (a GUI prompt on the
  // operator's desktop would block the create); GCM_INTERACTIVE does the same for Git Credential Manager.
  out.GIT_ASKPASS = "";
  out.GCM_INTERACTIVE = "never";
  const { protocols } = settings.policy;
  out.GIT_ALLOW_PROTOCOL = protocols.join(":");
  out.GIT_PROTOCOL_FROM_USER = "0";
  if (protocols.includes("ssh") && !out.GIT_SSH_COMMAND && !out.GIT_SSH && !sshCommandConfigured(cwd, out)) out.GIT_SSH_COMMAND = BATCH_SSH;
  const config: (readonly [string, string])[] = [["protocol.allow", "never"], ...protocols.map((name) => [`protocol.${name}.allow`, "always"] as const), ...HTTP_LOW_SPEED];
  if (settings.credential) config.push(...credentialConfig(settings.credential, out));
  config.forEach(([key, value], index) => {
    out[`GIT_CONFIG_KEY_${index}`] = key;
    out[`GIT_CONFIG_VALUE_${index}`] = value;
  });
  out.GIT_CONFIG_COUNT = String(config.length);
  return out;
}

/**
 * Config entries giving git the credential for its own URL only. The empty value first empties
 * the helper list, so no helper of the operator's (`store`, a keychain) is asked for this host
 * or ever told the credential to keep.
 */
function credentialConfig(credential: GitCredential, env: Record<string, string>): [string, string][] {
  env.PASEO_GIT_CREDENTIAL_PROTOCOL = credential.protocol;
  env.PASEO_GIT_CREDENTIAL_HOST = credential.host;
  env.PASEO_GIT_USERNAME = credential.username;
  env.PASEO_GIT_PASSWORD = credential.password;
  const key = `credential.${credential.protocol}://${credential.host}.helper`;
  return [
    [key, ""],
    [key, CREDENTIAL_HELPER],
  ];
}

const sshCommands = new Map<string, boolean>();

/** Whether the operator's git config (as seen from `cwd`) sets core.sshCommand: theirs wins over batch mode. */
function sshCommandConfigured(cwd: string | undefined, env: Record<string, string>): boolean {
  const where = cwd ?? process.cwd();
  let known = sshCommands.get(where);
  if (known === undefined) {
    const result = Bun.spawnSync({ cmd: [gitPath(), "config", "--get", "core.sshCommand"], cwd: where, env, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    known = result.exitCode === 0;
    sshCommands.set(where, known);
  }
  return known;
}

/**
 * The oldest git every operation works with: 2.31 brought `rev-parse --path-format` (finding a
 * host repository) and GIT_CONFIG_COUNT (git's protocol, low-speed and credential settings
 * above). `doctor` checks it.
 */
export const MIN_GIT: readonly [number, number] = [2, 31];

/** git on the runtime's PATH (the daemon's environment), or null: the one lookup. */
export function findGit(): string | null {
  return Bun.which("git", { PATH: process.env.PATH ?? "" });
}

let cachedGit: string | undefined;

/** Absolute path of git on the runtime's PATH. */
export function gitPath(): string {
  if (cachedGit) return cachedGit;
  const found = findGit();
  if (!found) throw new Error(`git was not found on PATH (${process.env.PATH ?? "unset"}); install git ${MIN_GIT[0]}.${MIN_GIT[1]} or newer (paseo-host-runtime doctor checks it)`);
  cachedGit = found;
  return found;
}
