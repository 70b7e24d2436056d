/** argv → one validated invocation. Nothing here reads stdin or touches state. */
import { signalNameProblem } from "./platform/signals.ts";

/** How one flag is documented in `<command> --help`, and what its value must be. */
export interface FlagDoc {
  /** The value's placeholder in help (`DIR`); absent for a switch. */
  value?: string;
  /** One line: what the flag does. */
  help: string;
  /** The default, as a person reads it. */
  default?: string;
  /** Every accepted value, when there is a fixed list. */
  values?: readonly string[];
  /** Why a value is unusable (a usage error, exit 2), or null when it is fine. */
  check?: (value: string) => string | null;
}

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
  /** Positional words accepted before `--` (none when absent). */
  args?: { max: number };
  /** One line for `--help`. */
  summary: string;
  /** Usage line after the command name. */
  usage: string;
  /** Whether this command is part of the daemon's protocol (shown first in help). */
  protocol?: boolean;
  /** Internal (run by this runtime on a remote host, never by people): left out of help. */
  hidden?: boolean;
  /** Flag name → its documentation (`<command> --help`). Keep it beside the flag lists above. */
  flags?: Readonly<Record<string, FlagDoc>>;
  /** Single-letter aliases: `w` → `workspace-id` makes `-w W` mean `--workspace-id W`. */
  aliases?: Readonly<Record<string, string>>;
  /** Command lines shown under "Examples" (without the program name). */
  examples?: readonly string[];
  /** Environment variables that apply: name → what it does here. */
  env?: Readonly<Record<string, string>>;
  /** "request": reads one LifecycleRequest on stdin (refused when stdin is a terminal). */
  stdin?: "request";
}

export interface Invocation {
  command: string;
  flags: Map<string, string>;
  lists: Map<string, string[]>;
  switches: Set<string>;
  /** Positional words (only for commands with `args`). */
  args: string[];
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

/** Where the home comes from when options.stateDirectory is absent (the same rule as store/home.ts). */
export const HOME_ENV: Readonly<Record<string, string>> = {
  PASEO_HOST_RUNTIME_HOME: "the runtime home when options.stateDirectory (--home) is not given",
  XDG_STATE_HOME: "else the home is $XDG_STATE_HOME/paseo-host-runtime",
  HOME:
    process.platform === "darwin"
      ? "else the home is ~/Library/Application Support/paseo-host-runtime"
      : "else the home is ~/.local/state/paseo-host-runtime",
};

const PROTOCOL_FLAGS: Readonly<Record<string, FlagDoc>> = {
  "workspace-id": { value: "W", help: "the workspace id the daemon addresses" },
  "exec-id": { value: "E", help: "the execution id of the spawn envelope" },
  signal: { value: "SIG", help: "the signal to send, by name (the daemon sends SIGKILL)", check: signalNameProblem },
};

const REQUEST = '{"protocolVersion":1,"options":{}}';

/** A protocol operation that reads one lifecycle request on stdin. */
function lifecycle(spec: Omit<CommandSpec, "protocol" | "stdin" | "flags" | "env">, operator: string): CommandSpec {
  return {
    ...spec,
    protocol: true,
    stdin: "request",
    flags: PROTOCOL_FLAGS,
    env: { ...HOME_ENV, PATH: "the runtime inherits the daemon's environment; git is found on its PATH" },
    examples: [...(spec.examples ?? []), `paseo-host-runtime ${operator}    # the operator command: no JSON to write`],
  };
}

/**
 * Every command the binary knows. Protocol v1 operations first. No prototype: a word such as
 * `constructor` or `__proto__` is an unknown command, not Object's method.
 */
export const COMMANDS: Record<string, CommandSpec> = Object.assign(Object.create(null) as Record<string, CommandSpec>, {
  describe: {
    required: [],
    protocol: true,
    usage: "",
    summary: "print the runtime's capabilities (DescribeResponse)",
    examples: ["paseo-host-runtime describe", "paseo-host-runtime doctor    # the operator's check of this host"],
  },
  create: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "create a workspace (idempotent)",
      examples: ["paseo-host-runtime create --workspace-id W < create-request.json"],
    },
    "new -w W --source DIR",
  ),
  inspect: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "report a workspace's status",
      examples: [`echo '${REQUEST}' | paseo-host-runtime inspect --workspace-id W`],
    },
    "workspace inspect -w W",
  ),
  exec: {
    required: WORKSPACE,
    protocol: true,
    usage: "--workspace-id W  (fd 3: controls, fd 4: events)",
    summary: "run a workload inside a workspace",
    flags: PROTOCOL_FLAGS,
    examples: ["paseo-host-runtime exec --workspace-id W 3< envelope.json 4>&1", "paseo-host-runtime run -w W -- COMMAND...    # the operator command: the daemon's side of exec"],
    env: { ...HOME_ENV },
  },
  signal: lifecycle(
    {
      required: ["workspace-id", "exec-id", "signal"],
      usage: "--workspace-id W --exec-id E --signal SIGKILL < request.json",
      summary: "signal an execution's process group and wait until it is gone",
      examples: [`echo '${REQUEST}' | paseo-host-runtime signal --workspace-id W --exec-id E --signal SIGKILL`],
    },
    "ps -w W    # find the exec id",
  ),
  pause: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "stop executions and mark the workspace paused",
      examples: [`echo '${REQUEST}' | paseo-host-runtime pause --workspace-id W`],
    },
    "workspace pause -w W",
  ),
  resume: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "mark a paused workspace ready again",
      examples: [`echo '${REQUEST}' | paseo-host-runtime resume --workspace-id W`],
    },
    "workspace resume -w W",
  ),
  destroy: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "remove everything the workspace owns",
      examples: [`echo '${REQUEST}' | paseo-host-runtime destroy --workspace-id W`],
    },
    "rm -w W",
  ),
  reconcile: lifecycle(
    {
      required: [],
      usage: "< request.json (with workspaceIds)",
      summary: "destroy this owner's workspaces not listed",
      examples: [`echo '{"protocolVersion":1,"options":{},"workspaceIds":["W"]}' | paseo-host-runtime reconcile`],
    },
    "workspace reconcile --keep W",
  ),
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
} satisfies Record<string, CommandSpec>);

/** Registers an operator command (kept out of the protocol table above). */
export function addCommand(name: string, spec: CommandSpec): void {
  COMMANDS[name] = spec;
}

/** The names of a command group's subcommands (`workspace` → pause, resume, …), empty when it is none. */
export function subcommands(group: string): string[] {
  return Object.keys(COMMANDS)
    .filter((name) => name.startsWith(`${group} `))
    .map((name) => name.slice(group.length + 1));
}

/** The command argv names (one word, or a group and its subcommand) and how many words that took. */
export function commandName(argv: readonly string[]): { name: string; words: number } | null {
  const [first, second] = argv;
  if (first === undefined) return null;
  if (second !== undefined && COMMANDS[`${first} ${second}`]) return { name: `${first} ${second}`, words: 2 };
  return { name: first, words: 1 };
}

/** Resolves a single-dash alias (`-w`) to its flag name, or returns the word unchanged. */
function expandAlias(spec: CommandSpec, word: string): string {
  if (!/^-[A-Za-z]$/.test(word)) return word;
  const name = spec.aliases?.[word.slice(1)];
  return name === undefined ? word : `--${name}`;
}

/** Parses argv (without the program name). Throws UsageError on anything unexpected. */
export function parseArgs(argv: readonly string[]): Invocation {
  const named = commandName(argv);
  if (named === null) throw new UsageError("missing command");
  const { name: command } = named;
  const spec = COMMANDS[command];
  if (!spec) {
    const subs = subcommands(command);
    if (subs.length > 0) {
      const given = argv[1];
      const what = given === undefined ? "needs a subcommand" : `has no subcommand ${JSON.stringify(given)}`;
      throw new UsageError(`${command} ${what}: one of ${subs.join(", ")}`, command);
    }
    throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
  const words = argv.slice(named.words);
  const invocation: Invocation = { command, flags: new Map(), lists: new Map(), switches: new Set(), args: [], rest: [] };
  for (let i = 0; i < words.length; i++) {
    const word = expandAlias(spec, words[i]!);
    if (word === "--") {
      if (!spec.rest) throw new UsageError(`${command} takes no arguments after --`, command);
      invocation.rest = words.slice(i + 1);
      break;
    }
    if (!word.startsWith("--")) {
      if (spec.args && !word.startsWith("-") && invocation.args.length < spec.args.max) {
        invocation.args.push(word);
        continue;
      }
      throw new UsageError(`unexpected argument ${JSON.stringify(word)}`, command);
    }
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
    checkValue(spec, command, name, value);
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
  if (spec.rest && invocation.rest.length === 0) throw new UsageError(`${command} needs a command after --`, command);
  return invocation;
}

/** The rules every value obeys, then the flag's own list and check. */
function checkValue(spec: CommandSpec, command: string, name: string, value: string): void {
  if (name.endsWith("-id") && value === "") throw new UsageError(`--${name} must not be empty`, command);
  if (value.includes("\0")) throw new UsageError(`--${name} must not contain a NUL byte`, command);
  const doc = spec.flags?.[name];
  if (doc?.values && !doc.values.includes(value)) {
    throw new UsageError(`--${name} must be one of ${doc.values.join(", ")}; got ${JSON.stringify(value)}`, command);
  }
  const problem = doc?.check?.(value);
  if (problem) throw new UsageError(`--${name} ${problem}`, command);
}

/** Full help text: protocol commands with their argv, operator commands with one line each. */
export function helpText(version: string): string {
  const entries = Object.entries(COMMANDS).filter(([, spec]) => !spec.hidden);
  const protocol = entries.filter(([, spec]) => spec.protocol);
  const operator = entries.filter(([, spec]) => !spec.protocol);
  const width = Math.max(...operator.map(([name]) => name.length), 10);
  return [
    `paseo-host-runtime ${version}: workspace runtime for the Paseo daemon (command runtime protocol v1)`,
    "",
    "Usage: paseo-host-runtime <command> [options]",
    "",
    "Protocol commands (run by the Paseo daemon; JSON on stdin/stdout, diagnostics on stderr):",
    ...protocol.map(([name, spec]) => `  ${name.padEnd(10)} ${spec.summary}\n               paseo-host-runtime ${name} ${spec.usage}`.trimEnd()),
    ...(operator.length ? ["", "Operator commands (for people; `paseo-host-runtime <command> --help` for flags, defaults and examples):", ...operator.map(([name, spec]) => `  ${name.padEnd(width)}  ${spec.summary}`)] : []),
    "",
    "Remote hosts (every protocol command, carried over OpenSSH; README \"Remote workspaces\"):",
    "  paseo-host-runtime --remote ssh://[user@]host[:port][/path/to/paseo-host-runtime] [--ssh-config FILE] <command> …",
    "",
    "  -h, --help, help [COMMAND]   show this help, or one command's",
    "  -V, --version, version       print version, target and Bun version",
    "",
    "Exit status: 0 success, 1 operation failed (reason on stderr), 2 usage error.",
    "",
  ].join("\n");
}

/** Usage of one command (what a usage error prints). */
export function commandUsage(command: string): string {
  const spec = COMMANDS[command];
  if (!spec) {
    const subs = subcommands(command);
    if (subs.length === 0) return "";
    return `Usage: paseo-host-runtime ${command} <${subs.join("|")}> [options]\n${subs
      .map((sub) => `  ${`${command} ${sub}`.padEnd(20)} ${COMMANDS[`${command} ${sub}`]!.summary}`)
      .join("\n")}\n`;
  }
  return `Usage: paseo-host-runtime ${command} ${spec.usage}\n  ${spec.summary}\nRun \`paseo-host-runtime ${command} --help\` for its flags, defaults and examples.\n`;
}

/** `<command> --help`: usage, every flag with its default and values, examples, environment. */
export function commandHelp(command: string): string {
  const spec = COMMANDS[command];
  if (!spec) return commandUsage(command);
  const lines = [`Usage: paseo-host-runtime ${command} ${spec.usage}`.trimEnd(), "", `${spec.summary[0]!.toUpperCase()}${spec.summary.slice(1)}.`];
  if (spec.stdin === "request") lines.push("Reads one LifecycleRequest (JSON) on stdin; refused when stdin is a terminal.");
  const aliasOf = new Map(Object.entries(spec.aliases ?? {}).map(([letter, name]) => [name, letter]));
  const names = [...spec.required, ...(spec.optional ?? []), ...(spec.repeatable ?? []), ...(spec.switches ?? [])];
  const rows = names.map((name) => {
    const doc = spec.flags?.[name];
    const letter = aliasOf.get(name);
    const isSwitch = spec.switches?.includes(name) ?? false;
    const left = `${letter ? `-${letter}, ` : "    "}--${name}${isSwitch ? "" : ` ${doc?.value ?? "VALUE"}`}`;
    const notes: string[] = [];
    if (spec.required.includes(name)) notes.push("required");
    if (spec.repeatable?.includes(name)) notes.push("repeatable");
    if (doc?.values) notes.push(`one of: ${doc.values.join(", ")}`);
    if (doc?.default !== undefined) notes.push(`default: ${doc.default}`);
    const right = `${doc?.help ?? ""}${notes.length ? ` [${notes.join("; ")}]` : ""}`;
    return [left, right] as const;
  });
  rows.push(["-h, --help", "show this help"]);
  const width = Math.max(...rows.map(([left]) => left.length));
  lines.push("", "Options:", ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`.trimEnd()));
  if (spec.rest) lines.push("  -- ARGV...".padEnd(width + 4) + "  the command to run (everything after --)");
  if (spec.examples?.length) lines.push("", "Examples:", ...spec.examples.map((example) => `  ${example}`));
  const env = Object.entries(spec.env ?? {});
  if (env.length) {
    const envWidth = Math.max(...env.map(([name]) => name.length));
    lines.push("", "Environment:", ...env.map(([name, what]) => `  ${name.padEnd(envWidth)}  ${what}`));
  }
  lines.push("", "Exit status: 0 success, 1 failed (reason on stderr), 2 usage error.", "");
  return lines.join("\n");
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

/** True when argv is for src/remote/main.ts: global flags first, or the `remote` operator command. */
export function isRemoteCall(argv: readonly string[]): boolean {
  return hasGlobalFlags(argv) || argv[0] === "remote";
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
