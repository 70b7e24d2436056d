/**
 * The protocol v1 operations' entries of the command table (src/cli.ts): each registered once,
 * its argument spec beside the loader of the code that runs it, in the order `--help` lists
 * them. Data only, like the table: every call but a bare `describe` loads it.
 */
import { HOME_ENV, type Command, type CommandSpec, type CommandTable, type FlagDoc, type HandlerLoader } from "./argv.ts";
import { signalNameProblem } from "./platform/signals.ts";

const WORKSPACE = ["workspace-id"] as const;

const PROTOCOL_FLAGS: Readonly<Record<string, FlagDoc>> = {
  "workspace-id": { value: "W", help: "the workspace id the daemon addresses" },
  "exec-id": { value: "E", help: "the execution id of the spawn envelope" },
  signal: { value: "SIG", help: "the signal to send, by name (the daemon sends SIGKILL)", check: signalNameProblem },
};

const REQUEST = '{"protocolVersion":1,"options":{}}';

/** How exec, and run through it, end as the workload ended (exec/mirror.ts). */
export const MIRRORED = "its exit code, or death by its signal (a shell shows 128+N: 143 after SIGTERM, 137 after SIGKILL; a pause or rm --force sends SIGTERM, then SIGKILL)";

/** A protocol operation that reads one lifecycle request on stdin. */
function lifecycle(spec: Omit<CommandSpec, "protocol" | "stdin" | "flags" | "env">, operator: string, handler: HandlerLoader): Command {
  return {
    ...spec,
    handler,
    protocol: true,
    // "ps -w W    # find the exec id" is a hint, not the same operation by hand.
    ...(operator.includes("#") ? {} : { byHand: operator }),
    stdin: "request",
    flags: PROTOCOL_FLAGS,
    env: { ...HOME_ENV, PATH: "the runtime inherits the daemon's environment; git is found on its PATH" },
    examples: [...(spec.examples ?? []), `paseo-host-runtime ${operator}    # the operator command: no JSON to write`],
  };
}

/** An operation on one workspace whose request holds only the options: its usage and example follow from its name. */
function onWorkspace(name: string, summary: string, operator: string, load: HandlerLoader): Command {
  const spec = { required: WORKSPACE, usage: "--workspace-id W < request.json", summary, examples: [`echo '${REQUEST}' | paseo-host-runtime ${name} --workspace-id W`] };
  return lifecycle(spec, operator, logged(name, load));
}

/** Lifecycle operations log their outcome in the runtime log (src/log/call-log.ts). */
function logged(op: string, load: HandlerLoader): HandlerLoader {
  return async () => {
    const [{ loggedOperation }, handler] = await Promise.all([import("./log/call-log.ts"), load()]);
    return loggedOperation(op, handler);
  };
}

/**
 * The protocol v1 operations (exec logs its own outcome, src/protocol-ops/exec.ts; describe has no home
 * to log to) and the hidden remote halves, in the order `--help` lists them.
 */
export const PROTOCOL_COMMANDS: CommandTable = Object.assign(Object.create(null) as Record<string, Command>, {
  describe: {
    required: [],
    protocol: true,
    usage: "",
    summary: "print the runtime's capabilities (DescribeResponse)",
    examples: ["paseo-host-runtime describe", "paseo-host-runtime doctor    # the operator's check of this host"],
    handler: async () => (await import("./protocol-ops/describe.ts")).describe,
  },
  create: lifecycle(
    {
      required: WORKSPACE,
      usage: "--workspace-id W < request.json",
      summary: "create a workspace (idempotent)",
      examples: ["paseo-host-runtime create --workspace-id W < create-request.json"],
    },
    "new -w W --source DIR",
    logged("create", async () => (await import("./protocol-ops/create.ts")).create),
  ),
  inspect: onWorkspace("inspect", "report a workspace's status", "workspace inspect -w W", async () => (await import("./protocol-ops/inspect.ts")).inspect),
  exec: {
    required: WORKSPACE,
    protocol: true,
    usage: "--workspace-id W  (fd 3: controls, fd 4: events)",
    summary: "run a workload inside a workspace",
    byHand: "run -w W -- COMMAND...",
    flags: PROTOCOL_FLAGS,
    examples: ["paseo-host-runtime exec --workspace-id W 3< envelope.json 4>&1", "paseo-host-runtime run -w W -- COMMAND...    # the operator command: the daemon's side of exec"],
    env: { ...HOME_ENV },
    exitStatus: `Exit status: the workload's, mirrored: ${MIRRORED}; nothing launched: 127 program not found, 126 not executable, 1 refused (reason on stderr); 2 usage error.`,
    handler: async () => (await import("./protocol-ops/exec.ts")).exec,
  },
  signal: lifecycle(
    {
      required: ["workspace-id", "exec-id", "signal"],
      usage: "--workspace-id W --exec-id E --signal SIGKILL < request.json",
      summary: "signal an execution's process group and wait until it is gone",
      examples: [`echo '${REQUEST}' | paseo-host-runtime signal --workspace-id W --exec-id E --signal SIGKILL`],
    },
    "ps -w W    # find the exec id",
    logged("signal", async () => (await import("./protocol-ops/signal.ts")).signal),
  ),
  pause: onWorkspace("pause", "stop executions and mark the workspace paused", "workspace pause -w W", async () => (await import("./protocol-ops/pause.ts")).pause),
  resume: onWorkspace("resume", "mark a paused workspace ready again", "workspace resume -w W", async () => (await import("./protocol-ops/resume.ts")).resume),
  destroy: onWorkspace("destroy", "remove everything the workspace owns", "rm -w W", async () => (await import("./protocol-ops/destroy.ts")).destroy),
  reconcile: lifecycle(
    {
      required: [],
      usage: "< request.json (with workspaceIds)",
      summary: "destroy this configuration's workspaces not listed",
      examples: [`echo '{"protocolVersion":1,"options":{},"workspaceIds":["W"]}' | paseo-host-runtime reconcile`],
    },
    "workspace reconcile --keep W",
    logged("reconcile", async () => (await import("./protocol-ops/reconcile.ts")).reconcile),
  ),
  "exec-remote": {
    required: WORKSPACE,
    optional: ["keepalive-ms"],
    hidden: true,
    usage: "--workspace-id W [--keepalive-ms N]  (stdin/stdout: the remote exec multiplex; a PING frame every N ms)",
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
