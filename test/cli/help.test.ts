/**
 * The command line as people meet it: `<command> --help` documents every flag, aliases and
 * `version` work, every unknown option is a usage error, an empty or relative `--home` is one
 * too, and a protocol operation on a terminal says what it expects instead of waiting.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { commandsFor } from "../../src/cli.ts";
import { runBinary, runOnTerminal } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";

/** Every command, the operator ones included (the table `--help` lists). */
const COMMANDS = commandsFor([]);

let sandbox: ReturnType<typeof tempDir>;
let env: Record<string, string>;
beforeAll(() => {
  sandbox = tempDir("phr-help-");
  mkdirSync(join(sandbox.path, "home"));
  env = { HOME: join(sandbox.path, "home"), XDG_STATE_HOME: join(sandbox.path, "home", "state"), PASEO_HOST_RUNTIME_HOME: join(sandbox.path, "runtime-home"), PASEO_HOME: join(sandbox.path, "paseo") };
});
afterAll(() => sandbox.cleanup());

const ALL = Object.keys(COMMANDS).filter((command) => !COMMANDS[command]!.hidden);
const OPERATOR = ALL.filter((command) => !COMMANDS[command]!.protocol);
/** The minimal valid command line of each command (required flags and arguments). */
const MINIMAL: Record<string, string[]> = {
  new: ["--workspace-id", "w", "--source", "/nonexistent"],
  rm: ["--workspace-id", "w"],
  run: ["--workspace-id", "w", "--", "/bin/true"],
  "workspace pause": ["--workspace-id", "w"],
  "workspace resume": ["--workspace-id", "w"],
  "workspace inspect": ["--workspace-id", "w"],
  "workspace reconcile": ["--keep-all"],
  remote: ["doctor", "ssh://nobody@127.0.0.1"],
};

function words(command: string): string[] {
  return command.split(" ");
}

/** `args` with extra flags put before a `--` when there is one. */
function withFlags(args: string[], flags: string[]): string[] {
  const end = args.indexOf("--");
  return end === -1 ? [...args, ...flags] : [...args.slice(0, end), ...flags, ...args.slice(end)];
}

describe("<command> --help", () => {
  test.each(ALL)("%s --help: every flag documented, examples, environment; exit 0", async (command) => {
    const spec = COMMANDS[command]!;
    const result = await runBinary([...words(command), "--help"], { env });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const text = result.stdout;
    expect(text).toStartWith(`Usage: paseo-host-runtime ${command}`);
    expect(text).toContain("\nOptions:\n");
    const flags = [...spec.required, ...(spec.optional ?? []), ...(spec.repeatable ?? []), ...(spec.switches ?? [])];
    for (const flag of flags) {
      const line = text.split("\n").find((l) => new RegExp(`^ {2}(-\\w, | {4})--${flag}( |$)`).test(l));
      expect(line, `--${flag} of ${command}`).toBeDefined();
      expect(line).not.toContain(" VALUE ");
      // A description after the flag (and its placeholder).
      expect(line!.replace(new RegExp(`^.*--${flag}( [A-Z|=.]+)?`), "").trim().length).toBeGreaterThan(5);
    }
    for (const [letter, flag] of Object.entries(spec.aliases ?? {})) expect(text).toMatch(new RegExp(`^ {2}-${letter}, --${flag}`, "m"));
    expect(text.split("\nExamples:\n")[1]?.split("\n\n")[0]!.split("\n").length).toBeGreaterThanOrEqual(2);
    if (command !== "describe") expect(text).toContain("\nEnvironment:\n");
  });

  test("values and defaults are shown: run --purpose, new --host-directory", async () => {
    const run = (await runBinary(["run", "--help"])).stdout;
    expect(run).toMatch(/--purpose KIND +the envelope's purpose \[one of: terminal, workspace-script, workspace-helper, git, setup, archive; default: terminal with --pty, else workspace-script\]/);
    const made = (await runBinary(["new", "--help"])).stdout;
    expect(made).toMatch(/--host-directory MODE .*\[one of: adopt, clone; default: adopt\]/);
    expect(made).toMatch(/^ {2}-w, --workspace-id W /m);
    // `-- ARGV...` is a row like the others: its text starts in the same column.
    const rows = run.split("\nOptions:\n")[1]!.split("\n\n")[0]!.split("\n");
    const argv = rows.find((line) => line.startsWith("  -- ARGV..."))!;
    expect(argv.indexOf("the command to run")).toBe(rows.find((line) => line.includes("--workspace-id W"))!.indexOf("the workspace to run in"));
  });

  test("every --owner that sets options.owner quotes its default the same way, remote doctor's included", async () => {
    const checked: string[] = [];
    for (const command of OPERATOR.filter((name) => COMMANDS[name]!.optional?.includes("owner"))) {
      const line = (await runBinary([...words(command), "--help"], { env })).stdout.split("\n").find((l) => /^ {6}--owner NAME /.test(l))!;
      if (!line.includes("(options.owner)")) continue; // logs --owner is a filter
      expect(line, command).toEndWith('[default: "default"]');
      checked.push(command);
    }
    expect(checked).toContain("remote");
    expect(checked).toContain("ls");
  });

  test("help COMMAND and help GROUP SUBCOMMAND print the same as --help; help of an unknown command exits 2", async () => {
    expect((await runBinary(["help", "workspace", "pause"])).stdout).toBe((await runBinary(["workspace", "pause", "--help"])).stdout);
    expect((await runBinary(["help", "ps"])).stdout).toBe((await runBinary(["ps", "-h"])).stdout);
    const unknown = await runBinary(["help", "frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toStartWith('paseo-host-runtime: help: unknown command "frobnicate"\n');
  });

  test("--help wins even after a bad flag, but not after --", async () => {
    expect((await runBinary(["ps", "--bogus", "--help"])).code).toBe(0);
    const after = await runBinary(["run", "-w", "w", "--home", join(sandbox.path, "no-such-home"), "--", "/bin/echo", "--help"], { env });
    expect(after.stdout).not.toContain("Usage:");
  });
});

describe("version, aliases, unknown options", () => {
  test("version, -V and --version print the same line; extra words are a usage error", async () => {
    const expected = (await runBinary(["--version"])).stdout;
    expect(expected).toMatch(/^paseo-host-runtime \S+ \(/);
    expect((await runBinary(["-V"])).stdout).toBe(expected);
    expect((await runBinary(["version"])).stdout).toBe(expected);
    for (const args of [["version", "now"], ["--version", "--bogus"], ["-V", "x"]]) {
      const result = await runBinary(args);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
    }
  });

  test("short aliases: -w, -q, -f, -e, -t mean their long flags", async () => {
    const home = join(sandbox.path, "alias-home");
    const source = join(sandbox.path, "alias-src");
    mkdirSync(source);
    expect((await runBinary(["new", "-w", "a", "--source", source, "--home", home], { env })).code).toBe(0);
    const ran = await runBinary(["run", "-w", "a", "--home", home, "-e", "A=1", "-e", "B=2", "--", "/usr/bin/env"], { env });
    expect(ran.stdout).toBe("A=1\nB=2\n");
    expect((await runBinary(["ps", "-q", "-w", "a", "--home", home], { env })).stdout).toBe("");
    expect((await runBinary(["rm", "-f", "-w", "a", "--home", home], { env })).stdout).toBe(`workspace a removed; its adopted directory ${source} is left as it was\n`);
  });

  test.each(ALL)("%s with an unknown option: exit 2, nothing on stdout", async (command) => {
    const result = await runBinary(withFlags([...words(command), ...(MINIMAL[command] ?? [])], ["--bogus-flag"]), { env });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toStartWith("paseo-host-runtime: unknown option --bogus-flag\n");
  });

  test.each(OPERATOR.filter((command) => COMMANDS[command]!.optional?.includes("home")))("%s --home '' and --home relative: exit 2, nothing written", async (command) => {
    const cwd = join(sandbox.path, `cwd-${command.replace(" ", "-")}`);
    mkdirSync(cwd);
    for (const [home, message] of [
      ["", "--home must not be empty"],
      ["relative/home", '--home must be an absolute path, got "relative/home"'],
    ] as const) {
      const result = await runBinary(withFlags([...words(command), ...(MINIMAL[command] ?? [])], ["--home", home]), { env, cwd });
      expect(result.code).toBe(2);
      expect(result.stderr).toStartWith(`paseo-host-runtime: ${message}`);
    }
    expect(readdirSync(cwd)).toEqual([]);
  });

  test("a group without its subcommand, or with an unknown one: exit 2 listing the subcommands", async () => {
    const bare = await runBinary(["workspace"]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toStartWith("paseo-host-runtime: workspace needs a subcommand: one of pause, resume, inspect, reconcile\n");
    const wrong = await runBinary(["workspace", "delete", "-w", "x"]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toStartWith('paseo-host-runtime: workspace has no subcommand "delete": one of pause, resume, inspect, reconcile\n');
    expect((await runBinary(["workspace", "--help"])).code).toBe(0);
  });
});

describe("a protocol operation on a terminal says what it expects instead of waiting", () => {
  const operations: [string, string[]][] = [
    ["create", ["--workspace-id", "w"]],
    ["inspect", ["--workspace-id", "w"]],
    ["pause", ["--workspace-id", "w"]],
    ["resume", ["--workspace-id", "w"]],
    ["destroy", ["--workspace-id", "w"]],
    ["reconcile", []],
    ["signal", ["--workspace-id", "w", "--exec-id", "0123456789abcdef0123456789abcdef", "--signal", "SIGKILL"]],
  ];

  test.each(operations)("%s: exit 2 with the stdin it wants and the operator command, nothing read or changed", async (op, args) => {
    const result = await runOnTerminal([op, ...args], { env, timeoutMs: 5000 });
    expect(result.timedOut).toBe(false);
    expect(result.code).toBe(2);
    expect(result.output).toStartWith(`paseo-host-runtime: ${op} reads one lifecycle request (JSON) on stdin, and stdin is a terminal; nothing was read or changed\nPipe one in, or use the operator command:\n  `);
    expect(result.output).toContain("paseo-host-runtime ");
    expect(readdirSync(sandbox.path).sort()).not.toContain("runtime-home");
  });

  test("describe needs no stdin and answers on a terminal too", async () => {
    const result = await runOnTerminal(["describe"], { env });
    expect(result.code).toBe(0);
    expect(result.output).toBe('{"protocolVersion":1,"modes":["pipes","pty"],"reconcile":true}\n');
  });

  test("a request piped in still works (stdin is /dev/null-like or a pipe, not a terminal)", async () => {
    const result = await runBinary(["inspect", "--workspace-id", "w"], { stdin: '{"protocolVersion":1,"options":{}}\n', env });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('{"type":"inspection","protocolVersion":1,"inspection":{"status":"missing"}}\n');
  });
});
