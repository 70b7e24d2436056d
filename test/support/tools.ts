/**
 * Tools from outside Node and npm that some tests need. A test whose tool is missing is skipped
 * and says so on stderr (through platform.ts), naming the tool and the package that brings it
 * (`.ci/run` installs them all on Debian/Ubuntu), so a green `npm test` never hides what it did
 * not run.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { skipBecause } from "./platform.ts";

/** The Debian/Ubuntu package that brings each tool (what .ci/run installs). */
const PACKAGE: Record<string, string> = {
  tmux: "tmux",
  wget: "wget",
  shasum: "perl",
  shellcheck: "shellcheck",
  curl: "curl",
  setpriv: "util-linux",
  bwrap: "bubblewrap",
  sshd: "openssh-server",
  ssh: "openssh-client",
  "ssh-keygen": "openssh-client",
  node: "nodejs",
  git: "git",
  npm: "npm",
};

/**
 * The tools of `tools` not on PATH (sshd: also /usr/sbin). When some are missing, prints
 * `skipped: <what>: <tool> not found (apt-get install <package>)` once.
 */
export function missingTools(what: string, tools: readonly string[]): string[] {
  const missing = tools.filter((tool) => Bun.which(tool) === null && !(tool === "sshd" && existsSync("/usr/sbin/sshd")));
  const packages = [...new Set(missing.map((tool) => PACKAGE[tool] ?? tool))].join(" ");
  skipBecause(what, missing.length > 0 ? `${missing.join(", ")} not found on PATH (apt-get install ${packages}, or run .ci/run)` : null);
  return missing;
}

/**
 * Why `bun build --compile --target=<bunTarget>` cannot get that target's Bun runtime here, or
 * null when it can: Bun downloads it from the npm registry (`@oven/<name>`) into its install
 * cache on first use.
 */
export async function crossRuntimeUnavailable(bunTarget: string): Promise<string | null> {
  const name = bunTarget.replace("-arm64", "-aarch64");
  const cacheDirs = [process.env.BUN_INSTALL_CACHE_DIR, process.env.BUN_INSTALL && join(process.env.BUN_INSTALL, "install", "cache"), join(homedir(), ".bun", "install", "cache")];
  if (cacheDirs.some((dir) => dir && existsSync(join(dir, `${name}-v${Bun.version}`)))) return null;
  const url = `https://registry.npmjs.org/@oven%2f${name}/${Bun.version}`;
  try {
    const response = await fetch(url, { method: "HEAD", signal: AbortSignal.timeout(5000) });
    if (response.ok) return null;
    return `${url} answered ${response.status}`;
  } catch (error) {
    return `the npm registry is unreachable (${url}: ${error instanceof Error ? error.message : String(error)}) and ${name}-v${Bun.version} is not in Bun's install cache`;
  }
}

/** True when what the tests' own sshd needs (kit/sshd.ts) is missing: OpenSSH's server, client and ssh-keygen. */
export function withoutSsh(what: string): boolean {
  return missingTools(what, ["sshd", "ssh", "ssh-keygen"]).length > 0;
}
