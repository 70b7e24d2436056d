/**
 * Operator commands: for the human who installs and checks the runtime. None of them is part
 * of the protocol; `new`, `rm` and `run` drive this binary's own protocol operations.
 */
import type { CommandSpec } from "../../cli.ts";
import type { Handler } from "../index.ts";
import { doctor } from "./doctor.ts";
import { logs } from "./logs.ts";
import { ls } from "./ls.ts";
import { newWorkspace } from "./new.ts";
import { ps } from "./ps.ts";
import { rm } from "./rm.ts";
import { run } from "./run.ts";
import { STORE_FLAGS as STORE } from "./common.ts";

/** Command name → spec, in the order `--help` lists them. */
export const OPERATOR_COMMANDS: Record<string, CommandSpec> = {
  doctor: {
    required: [],
    optional: [...STORE, "helper-path", "isolation"],
    switches: ["json", "quiet"],
    usage: "[--home DIR] [--owner NAME] [--helper-path PATH] [--isolation none|sandbox] [--json] [--quiet]",
    summary: "check this host can run workspaces; exit 1 if a required check fails",
  },
  ls: {
    required: [],
    optional: [...STORE],
    switches: ["json"],
    usage: "[--home DIR] [--owner NAME] [--json]",
    summary: "list the workspaces of a runtime home",
  },
  ps: {
    required: [],
    optional: ["workspace-id", ...STORE],
    switches: ["json"],
    usage: "[--workspace-id W] [--home DIR] [--owner NAME] [--json]",
    summary: "list live executions (never their environment)",
  },
  logs: {
    required: [],
    optional: ["workspace-id", "exec-id", ...STORE],
    switches: ["follow", "json"],
    usage: "[--workspace-id W] [--exec-id E] [--follow] [--json] [--home DIR] [--owner NAME]",
    summary: "show the runtime log (<home>/log/runtime.log): outcomes and failures, also after launch",
  },
  new: {
    required: ["workspace-id", "source"],
    optional: ["revision", "branch", "base", "checkout", "cwd", "project-id", "host-directory", ...STORE],
    switches: ["json"],
    usage:
      "--workspace-id W --source PATH|URL [--revision R] [--branch NAME --base REF | --checkout REF] [--cwd REL] [--project-id P] [--host-directory adopt|clone] [--home DIR] [--owner NAME] [--json]",
    summary: "create a workspace (runs this binary's `create`)",
  },
  rm: {
    required: ["workspace-id"],
    optional: [...STORE],
    switches: ["json"],
    usage: "--workspace-id W [--home DIR] [--owner NAME] [--json]",
    summary: "destroy a workspace (runs this binary's `destroy`)",
  },
  run: {
    required: ["workspace-id"],
    optional: ["cwd", "purpose", "helper-path", ...STORE],
    repeatable: ["env"],
    switches: ["pty", "inherit-env"],
    rest: true,
    usage: "--workspace-id W [--pty] [--cwd REL] [--env K=V]... [--inherit-env] [--purpose KIND] [--helper-path PATH] [--home DIR] [--owner NAME] -- ARGV...",
    summary: "run a command in a workspace through `exec`, as the daemon does; env is empty unless --env/--inherit-env",
  },
};

/** Command name → handler. */
export const OPERATOR_HANDLERS: Record<string, Handler> = {
  doctor,
  ls,
  ps,
  logs,
  new: newWorkspace,
  rm,
  run,
};
