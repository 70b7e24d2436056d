/**
 * Operator commands: for the human who installs and checks the runtime. None of them is part
 * of the protocol; `new`, `rm`, `run` and `workspace …` drive this binary's own protocol
 * operations. Each command's flags are documented here, beside its spec (`<command> --help`).
 */
import type { Command, FlagDoc, Handler, HandlerLoader } from "../argv.ts";
import { configCheck } from "./config.ts";
import { doctor } from "./doctor.ts";
import { logs } from "./logs.ts";
import { ls } from "./ls.ts";
import { newWorkspace } from "./new.ts";
import { FORMAT_FIELDS, formatProblem, ps } from "./ps.ts";
import { rm } from "./rm.ts";
import { run } from "./run.ts";
import { PURPOSES } from "./run-envelope.ts";
import { workspaceInspect, workspacePause, workspaceReconcile, workspaceResume } from "./workspace.ts";
import { FLAG_DOCS, OPTIONS_FLAGS, STOP_GRACE, STORE_ENV, STORE_FLAGS } from "./common.ts";

const STORE = STORE_FLAGS;
const OPTIONS = OPTIONS_FLAGS;
/** `-w` for --workspace-id, as everywhere in the operator commands. */
const W = { w: "workspace-id" } as const;
const SELECT = "[--home DIR] [--owner NAME] [--options-json JSON | --config FILE [--runtime NAME]]";

/** The flag docs a command takes from FLAG_DOCS, plus its own. */
function docs(names: readonly (keyof typeof FLAG_DOCS)[], own: Record<string, FlagDoc> = {}): Record<string, FlagDoc> {
  return { ...Object.fromEntries(names.map((name) => [name, FLAG_DOCS[name]])), ...own };
}

const SHARED = ["home", "owner", "options-json", "config", "runtime", "json"] as const;

/** This module already imports every operator command's code: its loader has nothing left to load. */
function ready(handler: Handler): HandlerLoader {
  return async () => handler;
}

/** Command name → spec and handler, in the order `--help` lists them. */
export const OPERATOR_COMMANDS: Record<string, Command> = {
  doctor: {
    required: [],
    optional: [...STORE, "helper-path", ...OPTIONS],
    switches: ["json", "quiet"],
    aliases: { q: "quiet" },
    usage: `[--helper-path PATH] [--json] [--quiet] ${SELECT}`,
    summary: "check this host can run workspaces (helper included); exit 1 if a required check fails",
    flags: docs([...SHARED, "helper-path"], { quiet: { help: "print only failures and warnings (nothing when all is well); same exit status" } }),
    examples: [
      "paseo-host-runtime doctor --home /var/lib/paseo-host-runtime --owner my-daemon",
      "sudo -u paseo paseo-host-runtime doctor --config ~paseo/.paseo/config.json   # as the daemon's user",
    ],
    env: { ...STORE_ENV, PATH: "where git is found (run doctor with the daemon's PATH)", NO_COLOR: "no colour (also off when stdout is not a terminal)", LANG: "ASCII marks (ok/FAIL/warn) unless LC_ALL, LC_CTYPE or LANG names UTF-8" },
    handler: ready(doctor),
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
    handler: ready(configCheck),
  },
  ls: {
    required: [],
    optional: [...STORE, ...OPTIONS],
    switches: ["json"],
    usage: `[--json] ${SELECT}`,
    summary: "list the workspaces of a runtime home (exit 1 when the home does not exist)",
    flags: docs(SHARED),
    examples: ["paseo-host-runtime ls", "paseo-host-runtime ls --home /var/lib/paseo-host-runtime --owner my-daemon --json"],
    env: STORE_ENV,
    handler: ready(ls),
  },
  ps: {
    required: [],
    optional: ["workspace-id", "format", ...STORE, ...OPTIONS],
    switches: ["json", "quiet"],
    aliases: { ...W, q: "quiet" },
    usage: `[--workspace-id W] [-q | --format FORMAT | --json] ${SELECT}`,
    summary: "list live executions: argv, age, memory (never their environment)",
    flags: docs([...SHARED, "workspace-id"], {
      "workspace-id": { value: "W", help: "only this workspace's executions" },
      quiet: { help: "print only the exec ids, one per line" },
      format: {
        value: "FORMAT",
        help: `fields separated by commas (a table), or a template like '{{.execId}}\\t{{.pid}}' (one line each); fields: ${FORMAT_FIELDS.join(", ")}`,
        check: formatProblem,
      },
    }),
    examples: ["paseo-host-runtime ps -w my-workspace", "paseo-host-runtime ps --format '{{.workspaceId}} {{.execId}} {{.memory}}'"],
    env: STORE_ENV,
    handler: ready(ps),
  },
  logs: {
    required: [],
    optional: ["workspace-id", "exec-id", ...STORE, ...OPTIONS],
    switches: ["follow", "json"],
    aliases: { ...W, f: "follow" },
    usage: `[--workspace-id W] [--exec-id E] [--follow] [--json] ${SELECT}`,
    summary: "show the runtime log (<home>/log/runtime.log): outcomes and failures, also after launch",
    flags: docs(SHARED, {
      "workspace-id": { value: "W", help: "only this workspace's lines" },
      "exec-id": { value: "E", help: "only this execution's lines" },
      owner: { value: "NAME", help: "only lines of this owner (the home comes from --home or the options)" },
      follow: { help: "then print new lines as they come, across rotations, until Ctrl-C" },
      json: { help: "the JSON lines exactly as written" },
    }),
    examples: ["paseo-host-runtime logs --home /var/lib/paseo-host-runtime -w my-workspace", "paseo-host-runtime logs --config ~/.paseo/config.json --follow"],
    env: STORE_ENV,
    handler: ready(logs),
  },
  new: {
    required: ["workspace-id", "source"],
    optional: ["revision", "branch", "base", "checkout", "cwd", "project-id", "host-directory", ...STORE, ...OPTIONS],
    switches: ["json"],
    aliases: W,
    usage: `--workspace-id W --source PATH|URL [--revision R] [--branch NAME --base REF | --checkout REF] [--cwd REL] [--project-id P] [--host-directory adopt|clone] [--json] ${SELECT}`,
    summary: "create a workspace (runs this binary's `create`)",
    flags: docs(SHARED, {
      "workspace-id": { value: "W", help: "the new workspace's id" },
      source: { value: "PATH|URL", help: "a host directory, or a git URL (scheme:// or user@host:path)" },
      revision: { value: "R", help: "for a git URL: the commit, tag or branch to check out", default: "the remote's default branch" },
      branch: { value: "NAME", help: "make a new branch NAME in its own worktree (needs --base)" },
      base: { value: "REF", help: "the commit or branch --branch starts at" },
      checkout: { value: "REF", help: "check out an existing branch or commit in its own worktree" },
      cwd: { value: "REL", help: "the working directory inside the workspace, relative", default: "its root" },
      "project-id": { value: "P", help: "the project id of the create request", default: "the source's base name" },
      "host-directory": { value: "MODE", help: "for a host directory placed as is (options.hostDirectory)", values: ["adopt", "clone"], default: "adopt" },
    }),
    examples: ["paseo-host-runtime new -w demo --source ~/src/project --branch try-it --base main", "paseo-host-runtime new -w demo --source ~/src/project --config ~/.paseo/config.json"],
    env: { ...STORE_ENV, PATH: "where git is found" },
    handler: ready(newWorkspace),
  },
  rm: {
    required: ["workspace-id"],
    optional: [...STORE, ...OPTIONS],
    switches: ["json", "force"],
    aliases: { ...W, f: "force" },
    usage: `--workspace-id W [--force] [--json] ${SELECT}`,
    summary: "destroy a workspace (runs this binary's `destroy`); refuses while executions are live unless --force",
    flags: docs(SHARED, {
      "workspace-id": { value: "W", help: "the workspace to destroy" },
      force: { help: `stop live executions first, as pause does: SIGTERM, ${STOP_GRACE}, then SIGKILL` },
    }),
    examples: ["paseo-host-runtime rm -w demo", "paseo-host-runtime rm -w demo --force --home /var/lib/paseo-host-runtime"],
    env: STORE_ENV,
    handler: ready(rm),
  },
  run: {
    required: ["workspace-id"],
    optional: ["cwd", "purpose", "helper-path", ...STORE, ...OPTIONS],
    repeatable: ["env"],
    switches: ["pty", "inherit-env"],
    rest: true,
    aliases: { ...W, e: "env", t: "pty" },
    usage: `--workspace-id W [--pty] [--cwd REL] [--env K=V]... [--inherit-env] [--purpose KIND] [--helper-path PATH] ${SELECT} -- ARGV...`,
    summary: "run a command in a workspace through `exec`, as the daemon does; env is empty unless --env/--inherit-env",
    flags: docs(["home", "owner", "options-json", "config", "runtime", "helper-path"], {
      "workspace-id": { value: "W", help: "the workspace to run in" },
      pty: { help: "on a fresh terminal (your terminal goes raw; resizes are forwarded)" },
      cwd: { value: "REL", help: "working directory, relative to the workspace root", default: "its root" },
      env: { value: "K=V", help: "one variable of the workload's environment" },
      "inherit-env": { help: "start from your own environment (then --env on top)" },
      purpose: { value: "KIND", help: "the envelope's purpose", values: Object.keys(PURPOSES), default: "terminal with --pty, else workspace-script" },
    }),
    examples: ["paseo-host-runtime run -w demo -e PATH=/usr/bin:/bin -- git status", "paseo-host-runtime run -w demo --pty --inherit-env -- bash"],
    env: { ...STORE_ENV, TERM: "with --pty, sent as the envelope's stdio.term" },
    handler: ready(run),
  },
  "workspace pause": {
    required: ["workspace-id"],
    optional: [...STORE, ...OPTIONS],
    switches: ["json"],
    aliases: W,
    usage: `--workspace-id W [--json] ${SELECT}`,
    summary: `stop a workspace's executions (SIGTERM, ${STOP_GRACE}, SIGKILL) and mark it paused (runs \`pause\`)`,
    flags: docs(SHARED, { "workspace-id": { value: "W", help: "the workspace to pause" } }),
    examples: ["paseo-host-runtime workspace pause -w demo", "paseo-host-runtime workspace pause -w demo --config ~/.paseo/config.json --runtime host"],
    env: STORE_ENV,
    handler: ready(workspacePause),
  },
  "workspace resume": {
    required: ["workspace-id"],
    optional: [...STORE, ...OPTIONS],
    switches: ["json"],
    aliases: W,
    usage: `--workspace-id W [--json] ${SELECT}`,
    summary: "mark a paused workspace ready again (runs `resume`)",
    flags: docs(SHARED, { "workspace-id": { value: "W", help: "the workspace to resume" } }),
    examples: ["paseo-host-runtime workspace resume -w demo", "paseo-host-runtime workspace resume -w demo --json"],
    env: STORE_ENV,
    handler: ready(workspaceResume),
  },
  "workspace inspect": {
    required: ["workspace-id"],
    optional: [...STORE, ...OPTIONS],
    switches: ["json"],
    aliases: W,
    usage: `--workspace-id W [--json] ${SELECT}`,
    summary: "show a workspace's status as the daemon sees it (runs `inspect`); exit 1 when missing or in error",
    flags: docs(SHARED, { "workspace-id": { value: "W", help: "the workspace to inspect" } }),
    examples: ["paseo-host-runtime workspace inspect -w demo", "paseo-host-runtime workspace inspect -w demo --json"],
    env: STORE_ENV,
    handler: ready(workspaceInspect),
  },
  "workspace reconcile": {
    required: [],
    optional: ["runtime-instance-id", ...STORE, ...OPTIONS],
    repeatable: ["keep"],
    switches: ["keep-all", "json"],
    usage: `(--keep W... | --keep-all) [--runtime-instance-id ID] [--json] ${SELECT}`,
    summary: "destroy the workspaces in this reconcile's scope that are not kept, clean up interrupted ones, reap abandoned executions (runs `reconcile`)",
    flags: docs(SHARED, {
      keep: { value: "W", help: "a workspace to keep; every other workspace of the owner is destroyed" },
      "keep-all": { help: "keep every workspace in scope: only clean up interrupted creates/destroys and reap abandoned executions" },
      "runtime-instance-id": { value: "ID", help: "speak the later dialect as the daemon with this runtimeInstanceId (ls --json shows it)", default: "the seed dialect" },
    }),
    examples: ["paseo-host-runtime workspace reconcile --keep-all   # after a daemon restart", "paseo-host-runtime workspace reconcile --keep demo --keep other --owner my-daemon"],
    env: STORE_ENV,
    handler: ready(workspaceReconcile),
  },
};
