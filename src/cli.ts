/**
 * Every command this binary knows, each registered once: its argument spec beside the loader of
 * the code that runs it: the protocol operations' entries in src/protocol-commands.ts, the
 * operator commands' here. The grammar (specs, parsing, help) is src/argv.ts.
 *
 * Every call but a bare `describe` (src/main.ts) loads this file, so it imports data only: a command's code is `import()`ed when it
 * runs (the release build is split per import(), bench/README.md "Start-up"); the operator
 * commands' entries are built only for a call that is not a protocol operation, and take their
 * shared flags, `ps` fields and `run` purposes from data-only modules.
 */
import type { Command, CommandTable, HandlerLoader } from "./argv.ts";
import { OPTIONS_FLAGS, OWNER_DEFAULT, remoteNote, SELECT, SHARED, STOP_GRACE, STORE_ENV, STORE_FLAGS, VIEW_EXIT, W, docs } from "./operator/flags.ts";
import { FORMAT_FIELDS, formatProblem } from "./operator/ps-format.ts";
import { PURPOSES } from "./operator/purposes.ts";
import { MIRRORED, PROTOCOL_COMMANDS } from "./protocol-commands.ts";
import { SSH_URL_GRAMMAR } from "./ssh-url.ts";

/** Where rm and `workspace pause|resume|inspect` go for a remote runtime. */
const ON_ITS_HOST = "its `--remote …` operation, on the host the local placement records (else the workspace's hash host), as for the daemon.";

/** `workspace pause|resume|inspect`: one workspace, one contract operation on it, through the daemon's options. */
function oneWorkspace(summary: string, workspaceHelp: string, examples: string[], handler: HandlerLoader): Command {
  return {
    required: ["workspace-id"],
    optional: [...STORE_FLAGS, ...OPTIONS_FLAGS],
    switches: ["json"],
    aliases: W,
    usage: `--workspace-id W [--json] ${SELECT}`,
    summary,
    about: [remoteNote(ON_ITS_HOST)],
    flags: docs(SHARED, { "workspace-id": { value: "W", help: workspaceHelp } }),
    examples,
    env: STORE_ENV,
    handler,
  };
}

/**
 * Operator commands: for the human who installs and checks the runtime. None of them is part of
 * the protocol; `new`, `rm`, `run` and `workspace …` drive this binary's own protocol
 * operations. Each command's flags are documented here, beside its spec (`<command> --help`).
 * Built only for a call that is not a protocol operation: evaluating these specs cost
 * `describe` ~0.8 ms.
 */
function operatorCommands(): Record<string, Command> {
  return {
    doctor: {
      required: [],
      optional: [...STORE_FLAGS, "helper-path", ...OPTIONS_FLAGS],
      switches: ["json", "quiet"],
      aliases: { q: "quiet" },
      usage: `[--helper-path PATH] [--json] [--quiet] ${SELECT}`,
      summary: "check this host can run workspaces (helper included); exit 1 if a required check fails",
      about: [remoteNote("`remote doctor` of each of its hosts (ssh, the remote binary and version, the host's own doctor), under a line per host; exit 1 if a required check fails on any.")],
      flags: docs([...SHARED, "helper-path"], { quiet: { help: "print only failures and warnings (nothing when all is well); same exit status" } }),
      examples: [
        "paseo-host-runtime doctor --home /var/lib/paseo-host-runtime --owner my-daemon",
        "sudo -u paseo paseo-host-runtime doctor --config ~paseo/.paseo/config.json   # as the daemon's user",
        "paseo-host-runtime doctor --config ~/.paseo/config.json --runtime buildbox   # each host of a --remote runtime",
      ],
      env: { ...STORE_ENV, PATH: "where git is found (run doctor with the daemon's PATH)", NO_COLOR: "no colour (also off when stdout is not a terminal)", LANG: "ASCII marks (ok/FAIL/warn) unless LC_ALL, LC_CTYPE or LANG names UTF-8" },
      handler: async () => (await import("./operator/doctor.ts")).doctor,
    },
    "config check": {
      required: [],
      switches: ["json"],
      args: { max: 1 },
      usage: "[FILE] [--json]",
      summary: "check the runtimes of the daemon's config.json that run paseo-host-runtime; exit 1 if a problem was found",
      flags: docs(["json"]),
      examples: ["paseo-host-runtime config check", "paseo-host-runtime config check /home/paseo/.paseo/config.json --json"],
      env: { PASEO_HOME: "the daemon home; FILE defaults to $PASEO_HOME/config.json, else ~/.paseo/config.json", ...STORE_ENV, PATH: "how a command without a slash is resolved" },
      handler: async () => (await import("./operator/config.ts")).configCheck,
    },
    homes: {
      required: [],
      optional: ["config"],
      switches: ["json"],
      usage: "[--config FILE] [--json]",
      summary: "list the runtime homes this binary works in (each runtime of the daemon's config.json that runs it, and the default home) and the workspaces in each",
      about: ["What install.sh --uninstall shows, and stops at while a home holds workspaces: remove them with rm first (a worktree stays registered in its repository until then)."],
      flags: { config: { value: "FILE", help: "the daemon's config.json", default: "$PASEO_HOME/config.json, else ~/.paseo/config.json (skipped when absent)" }, json: { help: "one JSON document instead of text" } },
      examples: ["paseo-host-runtime homes", "paseo-host-runtime homes --config /home/paseo/.paseo/config.json --json"],
      env: { PASEO_HOME: "the daemon home; the config defaults to $PASEO_HOME/config.json", ...STORE_ENV },
      handler: async () => (await import("./operator/homes.ts")).homes,
    },
    ls: {
      required: [],
      optional: [...STORE_FLAGS, ...OPTIONS_FLAGS],
      switches: ["json"],
      usage: `[--json] ${SELECT}`,
      summary: "list the workspaces of a runtime home, or of every host of a remote runtime",
      about: [remoteNote("each host's own `ls`, one table with a HOST column (--json: each workspace's host, and hosts[] with each host's home and error); a host whose home does not exist yet has none.")],
      flags: docs(SHARED),
      examples: ["paseo-host-runtime ls", "paseo-host-runtime ls --home /var/lib/paseo-host-runtime --owner my-daemon --json", "paseo-host-runtime ls --config ~/.paseo/config.json --runtime buildbox   # every host of a --remote runtime"],
      env: STORE_ENV,
      exitStatus: VIEW_EXIT,
      handler: async () => (await import("./operator/ls.ts")).ls,
    },
    ps: {
      required: [],
      optional: ["workspace-id", "format", ...STORE_FLAGS, ...OPTIONS_FLAGS],
      switches: ["json", "quiet"],
      aliases: { ...W, q: "quiet" },
      usage: `[--workspace-id W] [-q | --format FORMAT | --json] ${SELECT}`,
      summary: "list live executions: argv, age, memory (the cgroup's, else proportional set size), never their environment",
      about: [remoteNote("each host's own `ps`, with a HOST column (--format: {{.host}}; --json: each execution's host, and hosts[]).")],
      flags: docs([...SHARED, "workspace-id"], {
        "workspace-id": { value: "W", help: "only this workspace's executions" },
        quiet: { help: "print only the exec ids, one per line" },
        format: {
          value: "FORMAT",
          help: `fields separated by commas (a table), or a template like '{{.execId}}\\t{{.pid}}' (one line each); fields: ${FORMAT_FIELDS.join(", ")}`,
          check: formatProblem,
        },
      }),
      examples: ["paseo-host-runtime ps -w my-workspace", "paseo-host-runtime ps --format '{{.workspaceId}} {{.execId}} {{.memory}}'", "paseo-host-runtime ps --runtime buildbox --format '{{.host}} {{.workspaceId}} {{.command}}'"],
      env: STORE_ENV,
      exitStatus: VIEW_EXIT,
      handler: async () => (await import("./operator/ps.ts")).ps,
    },
    logs: {
      required: [],
      optional: ["workspace-id", "exec-id", ...STORE_FLAGS, ...OPTIONS_FLAGS],
      switches: ["follow", "json"],
      aliases: { ...W, f: "follow" },
      usage: `[--workspace-id W] [--exec-id E] [--follow] [--json] ${SELECT}`,
      summary: "show the runtime log (<home>/log/runtime.log): outcomes and failures, also after launch",
      about: [remoteNote("each host's log and this side's lines of the runtime's calls (HOST local), with a HOST column, merged by time (--follow: as they come); --json adds \"host\" (null: this side).")],
      flags: docs(SHARED, {
        "workspace-id": { value: "W", help: "only this workspace's lines" },
        "exec-id": { value: "E", help: "only this execution's lines" },
        owner: { value: "NAME", help: "only lines of this owner (the home comes from --home or the options)" },
        follow: { help: "then print new lines as they come, across rotations, until Ctrl-C" },
        json: { help: "the JSON lines exactly as written" },
      }),
      examples: ["paseo-host-runtime logs --home /var/lib/paseo-host-runtime -w my-workspace", "paseo-host-runtime logs --config ~/.paseo/config.json --follow", "paseo-host-runtime logs --config ~/.paseo/config.json --runtime buildbox -w demo"],
      env: STORE_ENV,
      exitStatus: VIEW_EXIT,
      handler: async () => (await import("./operator/logs.ts")).logs,
    },
    new: {
      required: ["workspace-id", "source"],
      optional: ["revision", "branch", "base", "checkout", "cwd", "project-id", "host-directory", ...STORE_FLAGS, ...OPTIONS_FLAGS],
      switches: ["json"],
      aliases: W,
      usage: `--workspace-id W --source PATH|URL [--revision R] [--branch NAME --base REF | --checkout REF] [--cwd REL] [--project-id P] [--host-directory adopt|clone] [--json] ${SELECT}`,
      summary: "create a workspace (runs the runtime's `create`)",
      about: [remoteNote("its `--remote … create` places the workspace as the daemon's does (options.remote.placement, recorded here) and ships a host directory there; the output names the host.")],
      flags: docs(SHARED, {
        "workspace-id": { value: "W", help: "the new workspace's id" },
        source: { value: "PATH|URL", help: "a host directory, or a git URL (scheme:// or user@host:path)" },
        revision: { value: "R", help: "for a git URL: the commit, tag or branch to check out", default: "the remote's default branch" },
        branch: { value: "NAME", help: "make a new branch NAME in its own worktree (needs --base)" },
        base: { value: "REF", help: "the commit or branch --branch starts at" },
        checkout: { value: "REF", help: "check out an existing branch or commit in its own worktree" },
        cwd: { value: "REL", help: "the working directory inside the workspace, relative", default: "its root" },
        "project-id": { value: "P", help: "the project id of the create request", default: "the source's base name" },
        "host-directory": { value: "MODE", help: "for a host directory placed as is (options.hostDirectory; a remote runtime always clones)", values: ["adopt", "clone"], default: "adopt" },
      }),
      examples: ["paseo-host-runtime new -w demo --source ~/src/project --branch try-it --base main", "paseo-host-runtime new -w demo --source ~/src/project --config ~/.paseo/config.json --runtime buildbox"],
      env: { ...STORE_ENV, PATH: "where git is found" },
      handler: async () => (await import("./operator/new.ts")).newWorkspace,
    },
    rm: {
      required: ["workspace-id"],
      optional: [...STORE_FLAGS, ...OPTIONS_FLAGS],
      switches: ["json", "force"],
      aliases: { ...W, f: "force" },
      usage: `--workspace-id W [--force] [--json] ${SELECT}`,
      summary: "destroy a workspace (runs the runtime's `destroy`); refuses while executions are live unless --force",
      about: [remoteNote(ON_ITS_HOST)],
      flags: docs(SHARED, {
        "workspace-id": { value: "W", help: "the workspace to destroy" },
        force: { help: `stop live executions first, as pause does: SIGTERM, ${STOP_GRACE}, then SIGKILL` },
      }),
      examples: ["paseo-host-runtime rm -w demo", "paseo-host-runtime rm -w demo --force --home /var/lib/paseo-host-runtime"],
      env: STORE_ENV,
      handler: async () => (await import("./operator/rm.ts")).rm,
    },
    orphans: {
      required: [],
      optional: [...STORE_FLAGS, ...OPTIONS_FLAGS],
      switches: ["remove", "force", "json"],
      aliases: { f: "force" },
      usage: `[--remove [--force]] [--json] ${SELECT}`,
      summary: "list an owner's orphans (left unlisted when its configuration was edited; no reconcile removes them); --remove destroys them",
      about: [remoteNote("every host's orphans; --remove destroys each through the runtime's `--remote … destroy`, which must route it to its host (exit 1 for one whose placement is not recorded here, or when a host did not answer).")],
      flags: docs(SHARED, {
        remove: { help: "destroy each orphan (runs the runtime's `destroy`); without it nothing is changed" },
        force: { help: `with --remove: stop an orphan's live executions first, as rm --force does (SIGTERM, ${STOP_GRACE}, then SIGKILL); without it such an orphan is left and the exit is 1` },
      }),
      examples: ["paseo-host-runtime orphans --config ~/.paseo/config.json", "paseo-host-runtime orphans --remove --home /var/lib/paseo-host-runtime --owner my-daemon"],
      env: STORE_ENV,
      handler: async () => (await import("./operator/orphans.ts")).orphans,
    },
    run: {
      required: ["workspace-id"],
      optional: ["cwd", "purpose", "helper-path", ...STORE_FLAGS, ...OPTIONS_FLAGS],
      repeatable: ["env"],
      switches: ["pty", "inherit-env"],
      rest: true,
      aliases: { ...W, e: "env", t: "pty" },
      usage: `--workspace-id W [--pty] [--cwd REL] [--env K=V]... [--inherit-env] [--purpose KIND] [--helper-path PATH] ${SELECT} -- ARGV...`,
      summary: "run a command in a workspace through `exec`, as the daemon does; env is empty unless --env/--inherit-env",
      about: [remoteNote("the runtime's own `--remote … exec`, as the daemon runs it (pipes and PTY), on the workspace's host.")],
      flags: docs(["home", "owner", "options-json", "config", "runtime", "helper-path"], {
        "workspace-id": { value: "W", help: "the workspace to run in" },
        pty: { help: "on a fresh terminal (your terminal goes raw; resizes are forwarded)" },
        cwd: { value: "REL", help: "working directory, relative to the workspace root", default: "its root" },
        env: { value: "K=V", help: "one variable of the workload's environment" },
        "inherit-env": { help: "start from your own environment (then --env on top)" },
        purpose: { value: "KIND", help: "the envelope's purpose", values: Object.keys(PURPOSES), default: "terminal with --pty, else workspace-script" },
      }),
      examples: ["paseo-host-runtime run -w demo -e PATH=/usr/bin:/bin -- git status", "paseo-host-runtime run -w demo --pty --inherit-env -- bash", "paseo-host-runtime run -w demo --runtime buildbox --pty -e PATH=/usr/bin:/bin -- bash   # on its host"],
      env: { ...STORE_ENV, TERM: "with --pty, sent as the envelope's stdio.term" },
      exitStatus: `Exit status: the workload's, as exec mirrors it: ${MIRRORED}; nothing started: exec's refusal (127 program not found, 126 not executable, 1 refused: reason on stderr); 1 a failure of the exec protocol; 2 usage error.`,
      handler: async () => (await import("./operator/run.ts")).run,
    },
    "workspace pause": oneWorkspace(`stop a workspace's executions (SIGTERM, ${STOP_GRACE}, SIGKILL) and mark it paused (runs \`pause\`)`, "the workspace to pause", ["paseo-host-runtime workspace pause -w demo", "paseo-host-runtime workspace pause -w demo --config ~/.paseo/config.json --runtime host"], async () => (await import("./operator/workspace.ts")).workspacePause),
    "workspace resume": oneWorkspace("mark a paused workspace ready again (runs `resume`)", "the workspace to resume", ["paseo-host-runtime workspace resume -w demo", "paseo-host-runtime workspace resume -w demo --json"], async () => (await import("./operator/workspace.ts")).workspaceResume),
    "workspace inspect": oneWorkspace("show a workspace's status as the daemon sees it (runs `inspect`); exit 1 when missing or in error", "the workspace to inspect", ["paseo-host-runtime workspace inspect -w demo", "paseo-host-runtime workspace inspect -w demo --json"], async () => (await import("./operator/workspace.ts")).workspaceInspect),
    "workspace reconcile": {
      required: [],
      optional: ["runtime-instance-id", ...STORE_FLAGS, ...OPTIONS_FLAGS],
      repeatable: ["keep"],
      switches: ["keep-all", "json"],
      usage: `(--keep W... | --keep-all) [--runtime-instance-id ID] [--json] ${SELECT}`,
      summary: "destroy the workspaces of this configuration that are not kept, clean up interrupted ones, reap abandoned executions (runs `reconcile`)",
      about: [remoteNote("its `--remote … reconcile` on every host; refused, nothing changed, when a host does not answer or a kept workspace is not routed to the host it lives on.")],
      flags: docs(SHARED, {
        keep: { value: "W", help: "a workspace to keep; every other workspace of this configuration is destroyed" },
        "keep-all": { help: "keep every workspace in scope: only clean up interrupted creates/destroys and reap abandoned executions" },
        "runtime-instance-id": { value: "ID", help: "speak the later dialect as the daemon with this runtimeInstanceId (ls --json shows it)", default: "the seed dialect" },
      }),
      examples: ["paseo-host-runtime workspace reconcile --keep-all   # after a daemon restart", "paseo-host-runtime workspace reconcile --keep demo --keep other --owner my-daemon"],
      env: STORE_ENV,
      handler: async () => (await import("./operator/workspace.ts")).workspaceReconcile,
    },
    // Listed with the others, `remote` parses its own words: a URL comes before its flags.
    remote: {
      required: [],
      optional: ["ssh-config", "home", "remote-home", "owner", "remote-owner"],
      switches: ["json"],
      usage: `doctor ${SSH_URL_GRAMMAR} [--ssh-config FILE] [--home DIR] [--remote-home DIR] [--owner NAME] [--remote-owner NAME] [--json]`,
      summary: "`remote doctor ssh://HOST`: check a remote host for `--remote` (ssh, remote binary and version, its doctor, round-trip time)",
      flags: {
        "ssh-config": { value: "FILE", help: "an ssh_config for ssh -F (identity, known hosts, port)", default: "~/.ssh/config" },
        home: { ...docs(["home"]).home!, help: "this side's runtime home (options.stateDirectory): its ssh/ holds the control sockets unless XDG_RUNTIME_DIR does" },
        "remote-home": { value: "DIR", help: "the remote runtime home its doctor checks (options.remote.stateDirectory)" },
        owner: { value: "NAME", help: "the local owner (options.owner); the remote owner defaults to NAME@<this host>", default: OWNER_DEFAULT },
        "remote-owner": { value: "NAME", help: "the remote owner its doctor checks (options.remote.owner)" },
        json: { help: "one JSON document instead of text" },
      },
      examples: ["paseo-host-runtime remote doctor ssh://builder@buildbox", "paseo-host-runtime remote doctor ssh://buildbox:2222/opt/paseo/bin/paseo-host-runtime --ssh-config ~/.ssh/paseo_config --json"],
      env: { PATH: "ssh is found on it", HOME: "this side's default home is under it; ssh ignores it: its ~/.ssh (config, known hosts, keys) is the login's home in the password database, so give --ssh-config for another" },
      words: async () => (await import("./operator/remote-doctor.ts")).remoteDoctor,
    },
  };
}

/**
 * Every command, in the order `--help` lists them. No prototype: a word such as `constructor`
 * or `__proto__` is an unknown command, not Object's method. A call that names a protocol
 * operation gets those alone (see operatorCommands).
 */
export function commandsFor(argv: readonly string[]): CommandTable {
  if (Object.hasOwn(PROTOCOL_COMMANDS, argv[0] ?? "")) return PROTOCOL_COMMANDS;
  return Object.assign(Object.create(null) as Record<string, Command>, PROTOCOL_COMMANDS, operatorCommands());
}
