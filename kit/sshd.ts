/**
 * A private OpenSSH server on 127.0.0.1 for `--remote` tests: a free port, a fresh host key,
 * one authorized client key, nothing else allowed (no passwords, no forwarding of any kind),
 * run in the foreground as our child so the test stops it. The "remote" runtime home is its
 * own temp directory; the remote binary is the compiled dist/paseo-host-runtime.
 */
import type { Subprocess } from "bun";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN } from "./binary.ts";
import { freePort } from "./ports.ts";
import { tempDir } from "./scratch.ts";
import { testCgroupRoot } from "./cgroup.ts";

export const SSHD = "/usr/sbin/sshd";

// Control sockets go to $XDG_RUNTIME_DIR when it is usable (src/remote/ssh.ts), a directory every
// run of this user shares; the labs keep theirs in their own local home, where closeMasters and
// masterPid find them. A test about XDG_RUNTIME_DIR passes it explicitly.
delete process.env.XDG_RUNTIME_DIR;

export interface SshLab {
  port: number;
  /** `ssh://root@127.0.0.1:PORT/…/paseo-host-runtime`. */
  url: string;
  /** `--remote URL --ssh-config FILE`: what goes before the operation. */
  prefix: string[];
  configFile: string;
  /** The remote side's runtime home. */
  remoteHome: string;
  /** The local (daemon-side) runtime home: control sockets and placements. */
  localHome: string;
  /** Daemon options selecting both homes (and a private cgroup root, which the remote side uses). */
  options: { stateDirectory: string; cgroupRoot?: string; remote: { stateDirectory: string; [key: string]: unknown } };
  dir: string;
  sshd: Subprocess;
  /** Closes every shared connection, stops sshd, removes everything. */
  stop(): Promise<void>;
}

function keygen(path: string): void {
  const result = Bun.spawnSync(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "paseo-test", "-f", path], { stdout: "ignore", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`ssh-keygen failed: ${result.stderr}`);
}

async function listening(port: number, sshd: Subprocess, log: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (sshd.exitCode !== null) throw new Error(`sshd exited ${sshd.exitCode}: ${readFileSync(log, "utf8")}`);
    try {
      const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
      socket.end();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`sshd did not listen on ${port}: ${readFileSync(log, "utf8")}`);
      await Bun.sleep(20);
    }
  }
}

/**
 * Starts sshd and returns the lab. `binary`: the remote program (default: the compiled binary).
 * With `peer`, this is a second "host" for the same daemon: it trusts the peer's client key, its
 * host key joins the peer's known_hosts, and it shares the peer's ssh configuration and local home.
 */
export async function startSshd(binary = BIN, peer?: SshLab): Promise<SshLab> {
  if (!existsSync(SSHD)) throw new Error(`${SSHD} is missing: install openssh-server (.ci/run does)`);
  // sshd refuses to start without its privilege separation directory (systemd makes it at boot).
  mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
  const { path: dir, cleanup } = tempDir("phr-ssh-");
  chmodSync(dir, 0o700);
  keygen(join(dir, "host_key"));
  const clientDir = peer?.dir ?? dir;
  if (!peer) keygen(join(dir, "client_key"));
  writeFileSync(join(dir, "authorized_keys"), readFileSync(join(clientDir, "client_key.pub")), { mode: 0o600 });
  const remoteHome = join(dir, "remote-home");
  const localHome = peer?.localHome ?? join(dir, "local-home");
  const log = join(dir, "sshd.log");
  let sshd: Subprocess | null = null;
  let port = 0;
  for (let attempt = 0; attempt < 5 && !sshd; attempt++) {
    port = await freePort();
    writeFileSync(
      join(dir, "sshd_config"),
      [
        "ListenAddress 127.0.0.1",
        `Port ${port}`,
        `HostKey ${join(dir, "host_key")}`,
        `PidFile ${join(dir, "sshd.pid")}`,
        `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
        "AuthenticationMethods publickey",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "PermitEmptyPasswords no",
        "AllowAgentForwarding no",
        "AllowTcpForwarding no",
        "AllowStreamLocalForwarding no",
        "X11Forwarding no",
        "PermitTunnel no",
        "PermitUserEnvironment no",
        "UsePAM no",
        "StrictModes no",
        "MaxSessions 100",
        "MaxStartups 100",
        "LogLevel ERROR",
        // This "host" has its own default runtime home, as a separate machine would.
        `SetEnv PASEO_HOST_RUNTIME_HOME=${remoteHome}`,
        "",
      ].join("\n"),
    );
    const candidate = Bun.spawn([SSHD, "-D", "-e", "-f", join(dir, "sshd_config")], { stdin: "ignore", stdout: Bun.file(log), stderr: Bun.file(log) });
    try {
      await listening(port, candidate, log);
      sshd = candidate;
    } catch (error) {
      candidate.kill("SIGKILL");
      await candidate.exited;
      if (attempt === 4) throw error;
    }
  }
  const hostKey = readFileSync(join(dir, "host_key.pub"), "utf8").split(" ").slice(0, 2).join(" ");
  writeFileSync(join(clientDir, "known_hosts"), `[127.0.0.1]:${port} ${hostKey}\n`, { flag: "a" });
  const configFile = join(clientDir, "ssh_config");
  if (!peer) writeFileSync(
    configFile,
    [
      "Host *",
      `  IdentityFile ${join(clientDir, "client_key")}`,
      "  IdentitiesOnly yes",
      `  UserKnownHostsFile ${join(clientDir, "known_hosts")}`,
      "  GlobalKnownHostsFile /dev/null",
      "  StrictHostKeyChecking yes",
      "  PasswordAuthentication no",
      "",
    ].join("\n"),
  );
  const url = `ssh://root@127.0.0.1:${port}${binary}`;
  const running = sshd!;
  // The remote side is this machine: its executions' cgroups go under a root this lab removes.
  const cgroups = testCgroupRoot();
  return {
    port,
    url,
    prefix: ["--remote", url, "--ssh-config", configFile],
    configFile,
    remoteHome,
    localHome,
    options: { stateDirectory: localHome, ...(cgroups ? { cgroupRoot: cgroups.path } : {}), remote: { stateDirectory: remoteHome } },
    dir,
    sshd: running,
    async stop() {
      closeMasters(localHome, configFile);
      running.kill("SIGTERM");
      await running.exited;
      cgroups?.cleanup();
      cleanup();
    },
  };
}

/** `ssh -O exit` for every control socket in a local home. */
export function closeMasters(localHome: string, configFile: string): void {
  const dir = join(localHome, "ssh");
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    Bun.spawnSync(["ssh", "-F", configFile, "-o", `ControlPath=${join(dir, name)}`, "-O", "exit", "unused"], { stdout: "ignore", stderr: "ignore" });
  }
}

/** The pid of the shared connection (ControlMaster) behind a control socket, or null. */
export function masterPid(localHome: string, configFile: string): number | null {
  const dir = join(localHome, "ssh");
  if (!existsSync(dir)) return null;
  for (const name of readdirSync(dir)) {
    const result = Bun.spawnSync(["ssh", "-F", configFile, "-o", `ControlPath=${join(dir, name)}`, "-O", "check", "unused"], { stdout: "pipe", stderr: "pipe" });
    const pid = /pid=(\d+)/.exec(result.stderr.toString())?.[1];
    if (pid) return Number(pid);
  }
  return null;
}
