import type { SpawnEnvelope } from "../protocol/index.ts";
import { selfIdentity } from "../platform/process.ts";
import { openStore, type Store } from "../store/db.ts";
import { reserveExecution } from "../store/executions.ts";
import { whileReady } from "../workspace/access.ts";
import { readOptions, type RuntimeOptions } from "../options.ts";
import { ownershipOf, type Ownership } from "../workspace/owner.ts";
import { confine } from "../workspace/paths.ts";
import { helperLaunch, resolveHelper } from "./helper.ts";
import { resolveProgram } from "./program.ts";

/** Everything validated before launch: nothing here has started a process. */
export interface LaunchPlan {
  workspaceId: string;
  execId: string;
  envelope: SpawnEnvelope;
  store: Store;
  /** Real directory inside the workspace. */
  cwd: string;
  /** File to execute; argv[0] is passed to the workload unchanged. */
  program: string;
  /** The argv the workload gets (the envelope's, unless a JavaScript helper needs the embedded engine). */
  argv: string[];
  env: Record<string, string>;
  /** Start time of this wrapper: the workload cannot be older. */
  wrapperStartTicks: number;
}

/**
 * The workload's environment: exactly the envelope's, except that a PTY's `term` becomes TERM
 * when the envelope sets none (the single documented exception).
 */
export function workloadEnv(envelope: SpawnEnvelope): Record<string, string> {
  const env = { ...envelope.env };
  if (envelope.stdio.kind === "pty" && envelope.stdio.term !== undefined && !Object.hasOwn(env, "TERM")) {
    env.TERM = envelope.stdio.term;
  }
  return env;
}

/**
 * The file to execute: argv[0] through PATH, or the workspace helper's own resolution. The later
 * dialect has no helperCommand: its helper must be on the workload's PATH, which for a host
 * runtime is the host's (the runtime's own, inherited from the daemon) since the call's env is {}.
 */
function resolveLaunch(envelope: SpawnEnvelope, owner: Ownership, options: RuntimeOptions, env: Record<string, string>, cwd: string) {
  const name = envelope.argv[0]!;
  if (envelope.purpose.kind === "workspace-helper" && !name.includes("/")) {
    const hostPath = owner.dialect === "later" ? process.env.PATH : undefined;
    return helperLaunch(resolveHelper(name, env, cwd, options.helperPath, hostPath), envelope.argv, env);
  }
  return { program: resolveProgram(name, env, cwd), argv: [...envelope.argv], env };
}

/**
 * Checks workspace, cwd and program, then claims the execution identity, all inside the one
 * transaction that sees the workspace ready (so pause and destroy cannot slip in between).
 */
export function prepareLaunch(workspaceId: string, envelope: SpawnEnvelope): LaunchPlan {
  const options = readOptions(envelope.options);
  const owner = ownershipOf(envelope, options.owner);
  const store = openStore(options);
  const self = selfIdentity();
  return whileReady(store.db, workspaceId, owner, (root) => {
    const cwd = confine(root, envelope.cwd ?? "", "cwd");
    const { program, argv, env } = resolveLaunch(envelope, owner, options, workloadEnv(envelope), cwd);
    reserveExecution(store.db, {
      workspaceId,
      execId: envelope.execId,
      mode: envelope.stdio.kind,
      purpose: envelope.purpose.kind,
      argv0: envelope.argv[0]!,
      bootId: self.bootId,
      wrapperPid: self.pid,
      wrapperStartTicks: self.startTicks,
    });
    return { workspaceId, execId: envelope.execId, envelope, store, cwd, program, argv, env, wrapperStartTicks: self.startTicks };
  });
}
