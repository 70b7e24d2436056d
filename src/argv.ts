/**
 * The command-line grammar: what a command's spec says, argv → one validated invocation, and
 * the help and usage texts of a command table. Nothing here reads stdin or touches state, and
 * nothing here knows which commands exist: src/cli.ts holds the table.
 */
import { nearestWord } from "./nearest.ts";
import { isMacOS } from "./platform/os.ts";
import { shellQuote } from "./shell-quote.ts";
import { SSH_URL_GRAMMAR } from "./ssh-url.ts";

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
  /** Lines `<command> --help` adds after the summary. */
  about?: readonly string[];
  /** Usage line after the command name. */
  usage: string;
  /** Whether this command is part of the daemon's protocol (shown first in help). */
  protocol?: boolean;
  /** For a protocol operation: the operator command that does it by hand (`workspace pause -w W`), named when its line is refused. */
  byHand?: string;
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
  /** The `--help` line on its exit status, when it is not the usual 0 / 1 / 2 (EXIT_STATUS). */
  exitStatus?: string;
}

/** What most commands exit with. */
const EXIT_STATUS = "Exit status: 0 success, 1 failed (reason on stderr), 2 usage error.";

export interface Invocation {
  command: string;
  flags: Map<string, string>;
  lists: Map<string, string[]>;
  switches: Set<string>;
  /** Positional words (only for commands with `args`). */
  args: string[];
  rest: string[];
  /** `--remote URL [--ssh-config FILE]` given before an operator command (src/main.ts). */
  globals?: Pick<GlobalFlags, "remote" | "sshConfig">;
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

/** An operation: returns the process exit code, or throws with a message for stderr. */
export type Handler = (invocation: Invocation) => number | Promise<number>;

/**
 * Loads one command's code. The release binary is built with `--splitting`, so a process
 * evaluates only the modules of the command it runs: node built-ins (`node:fs` alone is ~2 ms
 * at start-up), SQLite, the valibot schemas of the other operations are never loaded by
 * `describe` or `inspect` (bench/README.md, "Start-up").
 */
export type HandlerLoader = () => Promise<Handler>;

/** A command that parses its own words (a URL comes before its flags): `remote doctor ssh://…`. */
export type WordsHandler = (argv: readonly string[], commands: CommandTable) => Promise<number>;

/** One command: its argument spec and the code that runs it, registered together. */
export type Command = CommandSpec & ({ handler: HandlerLoader; words?: never } | { words: () => Promise<WordsHandler>; handler?: never });

/** Command name → command. No prototype: `constructor` or `__proto__` is an unknown command. */
export type CommandTable = Readonly<Record<string, Command>>;

/** Where the home comes from when options.stateDirectory is absent (the same rule as store/home.ts). */
export const HOME_ENV: Readonly<Record<string, string>> = {
  PASEO_HOST_RUNTIME_HOME: "the runtime home when options.stateDirectory (--home) is not given",
  XDG_STATE_HOME: "else the home is $XDG_STATE_HOME/paseo-host-runtime",
  HOME:
    isMacOS
      ? "else the home is ~/Library/Application Support/paseo-host-runtime"
      : "else the home is ~/.local/state/paseo-host-runtime",
};

/** The names of a command group's subcommands (`workspace` → pause, resume, …), empty when it is none. */
export function subcommands(commands: CommandTable, group: string): string[] {
  return Object.keys(commands)
    .filter((name) => name.startsWith(`${group} `))
    .map((name) => name.slice(group.length + 1));
}

/** The command argv names (one word, or a group and its subcommand) and how many words that took. */
export function commandName(commands: CommandTable, argv: readonly string[]): { name: string; words: number } | null {
  const [first, second] = argv;
  if (first === undefined) return null;
  if (second !== undefined && commands[`${first} ${second}`]) return { name: `${first} ${second}`, words: 2 };
  return { name: first, words: 1 };
}

/** Resolves a single-dash alias (`-w`) to its flag name, or returns the word unchanged. */
function expandAlias(spec: CommandSpec, word: string): string {
  if (!/^-[A-Za-z]$/.test(word)) return word;
  const name = spec.aliases?.[word.slice(1)];
  return name === undefined ? word : `--${name}`;
}

/** Parses argv (without the program name). Throws UsageError on anything unexpected. */
export function parseArgs(commands: CommandTable, argv: readonly string[]): Invocation {
  const named = commandName(commands, argv);
  if (named === null) throw new UsageError("missing command");
  const { name: command } = named;
  const spec = commands[command];
  if (!spec) {
    const subs = subcommands(commands, command);
    if (subs.length > 0) {
      const given = argv[1];
      const what = given === undefined ? "needs a subcommand" : `has no subcommand ${JSON.stringify(given)}`;
      const near = given === undefined ? null : nearestWord(given, subs);
      throw new UsageError(`${command} ${what}: one of ${subs.join(", ")}${near === null ? "" : `; did you mean ${JSON.stringify(`${command} ${near}`)}?`}`, command);
    }
    const near = nearestWord(command, visibleNames(commands));
    throw new UsageError(`unknown command ${JSON.stringify(command)}${near === null ? "" : `; did you mean ${JSON.stringify(near)}?`}`);
  }
  const words = argv.slice(named.words);
  try {
    return parseWords(spec, command, words);
  } catch (error) {
    // A person typed an operator's line at a protocol operation (`pause -w c1`): the daemon never
    // sends a one-letter flag. Name the command for people; the daemon's own errors stay as they are.
    if (!(error instanceof UsageError) || spec.byHand === undefined || !words.some((word) => /^-[A-Za-z]$/.test(word))) throw error;
    throw new UsageError(`${error.message}. ${command} is an operation of the daemon's protocol, not a command for people; by hand: paseo-host-runtime ${byHandLine(spec.byHand, words)}`, command);
  }
}

/** The first words of every command people may type (groups once), for "did you mean". */
function visibleNames(commands: CommandTable): string[] {
  const names = Object.entries(commands)
    .filter(([, spec]) => !spec.hidden)
    .map(([name]) => name.split(" ")[0]!);
  return [...new Set([...names, "help", "version"])];
}

/** The operator line `byHand` with the workspace id the person gave (`-w W` or `--workspace-id W`), when there was one. */
function byHandLine(byHand: string, words: readonly string[]): string {
  let given: string | undefined;
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === "-w" || word === "--workspace-id") given = words[i + 1];
    else if (word.startsWith("--workspace-id=")) given = word.slice("--workspace-id=".length);
  }
  return given === undefined || given === "" ? byHand : byHand.replace(/\bW\b/, shellQuote(given));
}

function parseWords(spec: CommandSpec, command: string, words: readonly string[]): Invocation {
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
      if (spec.rest && !word.startsWith("-")) {
        // `run -w c1 ls`: the command goes after `--`, which keeps its own flags from being read as ours.
        const fixed = [command, ...words.slice(0, i), "--", ...words.slice(i)].map(shellQuote).join(" ");
        throw new UsageError(`unexpected argument ${JSON.stringify(word)}: ${command} takes the command to run after --, as in: paseo-host-runtime ${fixed}`, command);
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
export function helpText(commands: CommandTable, version: string): string {
  const entries = Object.entries(commands).filter(([, spec]) => !spec.hidden);
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
    `  paseo-host-runtime --remote ${SSH_URL_GRAMMAR} [--ssh-config FILE] <command> …`,
    "  operator commands work on every host of a remote runtime of the daemon's config: <command> --config FILE --runtime NAME",
    "",
    "  -h, --help, help [COMMAND]   show this help, or one command's",
    "  -V, --version, version       print version, target and Bun version",
    "",
    "Exit status: 0 success, 1 operation failed (reason on stderr), 2 usage error.",
    "",
  ].join("\n");
}

/** Usage of one command (what a usage error prints). */
export function commandUsage(commands: CommandTable, command: string): string {
  const spec = commands[command];
  if (!spec) {
    const subs = subcommands(commands, command);
    if (subs.length === 0) return "";
    return `Usage: paseo-host-runtime ${command} <${subs.join("|")}> [options]\n${subs
      .map((sub) => `  ${`${command} ${sub}`.padEnd(20)} ${commands[`${command} ${sub}`]!.summary}`)
      .join("\n")}\n`;
  }
  return `Usage: paseo-host-runtime ${command} ${spec.usage}\n  ${spec.summary}\nRun \`paseo-host-runtime ${command} --help\` for its flags, defaults and examples.\n`;
}

/** `<command> --help`: usage, every flag with its default and values, examples, environment. */
export function commandHelp(commands: CommandTable, command: string): string {
  const spec = commands[command];
  if (!spec) return commandUsage(commands, command);
  const lines = [`Usage: paseo-host-runtime ${command} ${spec.usage}`.trimEnd(), "", `${spec.summary[0]!.toUpperCase()}${spec.summary.slice(1)}.`];
  if (spec.stdin === "request") lines.push("Reads one LifecycleRequest (JSON) on stdin; refused when stdin is a terminal.");
  lines.push(...(spec.about ?? []));
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
  if (spec.rest) lines.push(`  ${"-- ARGV...".padEnd(width)}  the command to run (everything after --)`);
  if (spec.examples?.length) lines.push("", "Examples:", ...spec.examples.map((example) => `  ${example}`));
  const env = Object.entries(spec.env ?? {});
  if (env.length) {
    const envWidth = Math.max(...env.map(([name]) => name.length));
    lines.push("", "Environment:", ...env.map(([name, what]) => `  ${name.padEnd(envWidth)}  ${what}`));
  }
  lines.push("", spec.exitStatus ?? EXIT_STATUS, "");
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
