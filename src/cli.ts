/**
 * Every command this binary knows, each registered once: its argument spec beside the loader of
 * the code that runs it. The grammar (specs, parsing, help) is src/argv.ts.
 *
 * The protocol operations are here. The operator commands, for people, are in
 * src/operator/commands.ts and join the table only when argv does not name a protocol
 * operation: their specs import the operator modules (options.ts and valibot among them, ~2 ms
 * that `describe` would otherwise pay).
 */
import { signalNameProblem } from "./platform/signals.ts";
import { HOME_ENV, type Command, type CommandSpec, type CommandTable, type FlagDoc, type HandlerLoader } from "./argv.ts";

const WORKSPACE = ["workspace-id"] as const;

const PROTOCOL_FLAGS: Readonly<Record<string, FlagDoc>> = {
  "workspace-id": { value: "W", help: "the workspace id the daemon addresses" },
  "exec-id": { value: "E", help: "the execution id of the spawn envelope" },
  signal: { value: "SIG", help: "the signal to send, by name (the daemon sends SIGKILL)", check: signalNameProblem },
};

const REQUEST = '{"protocolVersion":1,"options":{}}';

/** A protocol operation that reads one lifecycle request on stdin, and logs its outcome. */
function lifecycle(spec: Omit<CommandSpec, "protocol" | "stdin" | "flags" | "env">, operator: string, handler: HandlerLoader): Command {
  return {
    ...spec,
    handler,
    protocol: true,
    stdin: "request",
    flags: PROTOCOL_FLAGS,
    env: { ...HOME_ENV, PATH: "the runtime inherits the daemon's environment; git is found on its PATH" },
    examples: [...(spec.examples ?? []), `paseo-host-runtime ${operator}    # the operator command: no JSON to write`],
  };
}

/** Lifecycle operations log their outcome in the runtime log (src/log/call-log.ts). */
function logged(op: string, load: HandlerLoader): HandlerLoader {
  return async () => {
    const [{ loggedOperation }, handler] = await Promise.all([import("./log/call-log.ts"), load()]);
    return loggedOperation(op, handler);
  };
}

/**
 * The protocol v1 operations and the hidden remote halves, in the order `--help` lists them.
 * Exec logs its own outcome (src/ops/exec.ts); describe has no home to log to.
 */
const PROTOCOL_COMMANDS: CommandTable = Object.assign(Object.create(null) as Record<string, Command>, {
  describe: {
    required: [],
    protocol: true,
    usage: "",
    summary: "print the runtime's capabilities (DescribeResponse)",
    examples: ["paseo-host-runtime describe", "paseo-host-runtime doctor    # the operator's check of this host"],
    handler: async () => (await import("./ops/describe.ts")).describe,
  },
  create: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "create a workspace (idempotent)",
      examples: ["paseo-host-runtime create --workspace-id W < create-request.json"],
    },
    "new -w W --source DIR",
    logged("create", async () => (await import("./ops/create.ts")).create),
  ),
  inspect: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "report a workspace's status",
      examples: [`echo '${REQUEST}' | paseo-host-runtime inspect --workspace-id W`],
    },
    "workspace inspect -w W",
    logged("inspect", async () => (await import("./ops/inspect.ts")).inspect),
  ),
  exec: {
    required: WORKSPACE,
    protocol: true,
    usage: "--workspace-id W  (fd 3: controls, fd 4: events)",
    summary: "run a workload inside a workspace",
    flags: PROTOCOL_FLAGS,
    examples: ["paseo-host-runtime exec --workspace-id W 3< envelope.json 4>&1", "paseo-host-runtime run -w W -- COMMAND...    # the operator command: the daemon's side of exec"],
    env: { ...HOME_ENV },
    handler: async () => (await import("./ops/exec.ts")).exec,
  },
  signal: lifecycle(
    {
      required: ["workspace-id", "exec-id", "signal"],
      usage: "--workspace-id W --exec-id E --signal SIGKILL < request.json",
      summary: "signal an execution's process group and wait until it is gone",
      examples: [`echo '${REQUEST}' | paseo-host-runtime signal --workspace-id W --exec-id E --signal SIGKILL`],
    },
    "ps -w W    # find the exec id",
    logged("signal", async () => (await import("./ops/signal.ts")).signal),
  ),
  pause: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "stop executions and mark the workspace paused",
      examples: [`echo '${REQUEST}' | paseo-host-runtime pause --workspace-id W`],
    },
    "workspace pause -w W",
    logged("pause", async () => (await import("./ops/pause.ts")).pause),
  ),
  resume: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "mark a paused workspace ready again",
      examples: [`echo '${REQUEST}' | paseo-host-runtime resume --workspace-id W`],
    },
    "workspace resume -w W",
    logged("resume", async () => (await import("./ops/resume.ts")).resume),
  ),
  destroy: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "remove everything the workspace owns",
      examples: [`echo '${REQUEST}' | paseo-host-runtime destroy --workspace-id W`],
    },
    "rm -w W",
    logged("destroy", async () => (await import("./ops/destroy.ts")).destroy),
  ),
  reconcile: lifecycle(
    {
      required: [],
      usage: "< request.json (with workspaceIds)",
      summary: "destroy this owner's workspaces not listed",
      examples: [`echo '{"protocolVersion":1,"options":{},"workspaceIds":["W"]}' | paseo-host-runtime reconcile`],
    },
    "workspace reconcile --keep W",
    logged("reconcile", async () => (await import("./ops/reconcile.ts")).reconcile),
  ),
  "exec-remote": {
    required: WORKSPACE,
    hidden: true,
    usage: "--workspace-id W  (stdin/stdout: the remote exec multiplex)",
    summary: "internal: the remote half of `--remote … exec`, run over ssh",
    handler: async () => (await import("./remote/exec-remote.ts")).execRemote,
  },
  "receive-source": {
    required: [],
    optional: ["mirror", "seed"],
    hidden: true,
    usage: "[--mirror KEY] [--seed KEY] < header line + git bundle",
    summary: "internal: receive a `--remote` create's host-directory source over ssh",
    handler: async () => (await import("./remote/receive-source.ts")).receiveSource,
  },
} satisfies Record<string, Command>);

/** The `remote` operator command: listed with the others, it parses its own words (a URL comes first). */
const REMOTE: Command = {
  required: [],
  optional: ["ssh-config", "remote-home", "owner", "remote-owner"],
  switches: ["json"],
  usage: "doctor ssh://[user@]host[:port][/path/to/paseo-host-runtime] [--ssh-config FILE] [--remote-home DIR] [--owner NAME] [--remote-owner NAME] [--json]",
  summary: "`remote doctor ssh://HOST`: check a remote host for `--remote` (ssh, remote binary and version, its doctor, round-trip time)",
  flags: {
    "ssh-config": { value: "FILE", help: "an ssh_config for ssh -F (identity, known hosts, port)", default: "~/.ssh/config" },
    "remote-home": { value: "DIR", help: "the remote runtime home its doctor checks (options.remote.stateDirectory)" },
    owner: { value: "NAME", help: "the local owner (options.owner); the remote owner defaults to NAME@<this host>", default: "default" },
    "remote-owner": { value: "NAME", help: "the remote owner its doctor checks (options.remote.owner)" },
    json: { help: "one JSON document instead of text" },
  },
  examples: ["paseo-host-runtime remote doctor ssh://builder@buildbox", "paseo-host-runtime remote doctor ssh://buildbox:2222/opt/paseo/bin/paseo-host-runtime --ssh-config ~/.ssh/paseo_config --json"],
  env: { PATH: "ssh is found on it", HOME: "~/.ssh/config and known hosts are read from it unless --ssh-config" },
  words: async () => (await import("./remote/doctor.ts")).remoteDoctor,
};

/**
 * The table a call needs: the protocol commands alone when argv names one of them, else every
 * command, operator ones included (for them, for help, `--version` and `--remote`).
 */
export async function commandsFor(argv: readonly string[]): Promise<CommandTable> {
  if (Object.hasOwn(PROTOCOL_COMMANDS, argv[0] ?? "")) return PROTOCOL_COMMANDS;
  const { OPERATOR_COMMANDS } = await import("./operator/commands.ts");
  return Object.assign(Object.create(null) as Record<string, Command>, PROTOCOL_COMMANDS, OPERATOR_COMMANDS, { remote: REMOTE });
}
