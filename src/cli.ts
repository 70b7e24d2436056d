/** argv → one validated invocation. Nothing here reads stdin or touches state. */

export interface CommandSpec {
  /** Flags that must appear exactly once. */
  required: readonly string[];
  /** Flags that may appear at most once. */
  optional?: readonly string[];
  /** Flags that may repeat. */
  repeatable?: readonly string[];
  /** Flags without a value. */
  switches?: readonly string[];
  /** Whether words after `--` are accepted (and required). */
  rest?: boolean;
  /** One line for `--help`. */
  summary: string;
  /** Usage line after the command name. */
  usage: string;
  /** Whether this command is part of the daemon's protocol (shown first in help). */
  protocol?: boolean;
  /** Internal (run by this runtime on a remote host, never by people): left out of help. */
  hidden?: boolean;
}

export interface Invocation {
  command: string;
  flags: Map<string, string>;
  lists: Map<string, string[]>;
  switches: Set<string>;
  rest: string[];
}

/** Bad command line: reported with usage on stderr, exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

const WORKSPACE = ["workspace-id"] as const;

/** Every command the binary knows. Protocol v1 operations first. */
export const COMMANDS: Record<string, CommandSpec> = {
  describe: { required: [], protocol: true, usage: "", summary: "print the runtime's capabilities (DescribeResponse)" },
  create: { required: WORKSPACE, protocol: true, usage: "--workspace-id W < request.json", summary: "create a workspace (idempotent)" },
  inspect: { required: WORKSPACE, protocol: true, usage: "--workspace-id W < request.json", summary: "report a workspace's status" },
  exec: { required: WORKSPACE, protocol: true, usage: "--workspace-id W  (fd 3: controls, fd 4: events)", summary: "run a workload inside a workspace" },
  signal: {
    required: ["workspace-id", "exec-id", "signal"],
    protocol: true,
    usage: "--workspace-id W --exec-id E --signal SIGKILL < request.json",
    summary: "signal an execution's process group and wait until it is gone",
  },
  pause: { required: WORKSPACE, protocol: true, usage: "--workspace-id W < request.json", summary: "stop executions and mark the workspace paused" },
  resume: { required: WORKSPACE, protocol: true, usage: "--workspace-id W < request.json", summary: "mark a paused workspace ready again" },
  destroy: { required: WORKSPACE, protocol: true, usage: "--workspace-id W < request.json", summary: "remove everything the workspace owns" },
  reconcile: { required: [], protocol: true, usage: "< request.json (with workspaceIds)", summary: "destroy this owner's workspaces not listed" },
  "exec-remote": {
    required: WORKSPACE,
    hidden: true,
    usage: "--workspace-id W  (stdin/stdout: the remote exec multiplex)",
    summary: "internal: the remote half of `--remote … exec`, run over ssh",
  },
  "receive-source": {
    required: [],
    optional: ["mirror", "seed"],
    hidden: true,
    usage: "[--mirror KEY] [--seed KEY] < header line + git bundle",
    summary: "internal: receive a `--remote` create's host-directory source over ssh",
  },
};

/** Registers an operator command (kept out of the protocol table above). */
export function addCommand(name: string, spec: CommandSpec): void {
  COMMANDS[name] = spec;
}

/** Parses argv (without the program name). Throws UsageError on anything unexpected. */
export function parseArgs(argv: readonly string[]): Invocation {
  const [command, ...words] = argv;
  if (command === undefined) throw new UsageError("missing command");
  const spec = COMMANDS[command];
  if (!spec) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  const invocation: Invocation = { command, flags: new Map(), lists: new Map(), switches: new Set(), rest: [] };
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === "--") {
      if (!spec.rest) throw new UsageError(`${command} takes no arguments after --`, command);
      invocation.rest = words.slice(i + 1);
      break;
    }
    if (!word.startsWith("--") || word === "--") throw new UsageError(`unexpected argument ${JSON.stringify(word)}`, command);
    const eq = word.indexOf("=");
    const name = word.slice(2, eq === -1 ? undefined : eq);
    if (spec.switches?.includes(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`, command);
      invocation.switches.add(name);
      continue;
    }
    const known = spec.required.includes(name) || spec.optional?.includes(name) || spec.repeatable?.includes(name);
    if (!known) throw new UsageError(`unknown option --${name}`, command);
    let value: string | undefined;
    if (eq !== -1) value = word.slice(eq + 1);
    else {
      value = words[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`, command);
    }
    if (spec.repeatable?.includes(name)) {
      invocation.lists.set(name, [...(invocation.lists.get(name) ?? []), value]);
      continue;
    }
    if (invocation.flags.has(name)) throw new UsageError(`--${name} given more than once`, command);
    invocation.flags.set(name, value);
  }
  for (const name of spec.required) {
    if (!invocation.flags.has(name)) throw new UsageError(`missing --${name}`, command);
  }
  for (const [name, value] of invocation.flags) {
    if (name.endsWith("-id") && value === "") throw new UsageError(`--${name} must not be empty`, command);
    if (value.includes("\0")) throw new UsageError(`--${name} must not contain a NUL byte`, command);
  }
  if (spec.rest && invocation.rest.length === 0) throw new UsageError(`${command} needs a command after --`, command);
  return invocation;
}

/** Full help text. */
export function helpText(version: string): string {
  const line = ([name, spec]: [string, CommandSpec]) => `  ${name.padEnd(10)} ${spec.summary}\n               paseo-host-runtime ${name} ${spec.usage}`.trimEnd();
  const entries = Object.entries(COMMANDS).filter(([, spec]) => !spec.hidden);
  const operator = entries.filter(([, spec]) => !spec.protocol);
  return [
    `paseo-host-runtime ${version}: workspace runtime for the Paseo daemon (command runtime protocol v1)`,
    "",
    "Usage: paseo-host-runtime <command> [options]",
    "",
    "Protocol commands (run by the Paseo daemon; JSON on stdin/stdout, diagnostics on stderr):",
    ...entries.filter(([, spec]) => spec.protocol).map(line),
    ...(operator.length ? ["", "Operator commands:", ...operator.map(line)] : []),
    "",
    "Remote hosts (every protocol command, carried over OpenSSH; README \"Remote workspaces\"):",
    "  paseo-host-runtime --remote ssh://[user@]host[:port][/path/to/paseo-host-runtime] [--ssh-config FILE] <command> …",
    "",
    "  --help, -h   show this help (or `<command> --help`)",
    "  --version    print version, target and Bun version",
    "",
    "Exit status: 0 success, 1 operation failed (reason on stderr), 2 usage error.",
    "",
  ].join("\n");
}

/** Usage of one command. */
export function commandUsage(command: string): string {
  const spec = COMMANDS[command];
  if (!spec) return "";
  return `Usage: paseo-host-runtime ${command} ${spec.usage}\n  ${spec.summary}\n`;
}

/** Flags that come before the operation: `--remote URL` and `--ssh-config FILE`. */
export interface GlobalFlags {
  remote: string | null;
  sshConfig: string | null;
  /** The operation and its own arguments, exactly as the contract appends them. */
  rest: string[];
}

const GLOBAL_FLAGS = ["remote", "ssh-config"] as const;

/** True when argv starts with a global flag (the runtime then works on remote hosts). */
export function hasGlobalFlags(argv: readonly string[]): boolean {
  const first = argv[0] ?? "";
  return GLOBAL_FLAGS.some((name) => first === `--${name}` || first.startsWith(`--${name}=`));
}

/** Splits the global flags off argv. Throws UsageError for a repeated, empty or valueless one. */
export function parseGlobalFlags(argv: readonly string[]): GlobalFlags {
  const flags = new Map<string, string>();
  let i = 0;
  for (; i < argv.length; i++) {
    const word = argv[i]!;
    const eq = word.indexOf("=");
    const name = word.startsWith("--") ? word.slice(2, eq === -1 ? undefined : eq) : "";
    if (!(GLOBAL_FLAGS as readonly string[]).includes(name)) break;
    const value = eq === -1 ? argv[++i] : word.slice(eq + 1);
    if (value === undefined || value === "") throw new UsageError(`--${name} needs a value`);
    if (value.includes("\0")) throw new UsageError(`--${name} must not contain a NUL byte`);
    if (flags.has(name)) throw new UsageError(`--${name} given more than once`);
    flags.set(name, value);
  }
  return { remote: flags.get("remote") ?? null, sshConfig: flags.get("ssh-config") ?? null, rest: argv.slice(i) };
}
