/**
 * Starts `exec` of this binary the way the Paseo daemon does: five pipes (the workload's fd 0-2,
 * fd 3 controls in, fd 4 events out) and the spawn envelope written on fd 3 as one canonical
 * frame. What is done with fd 4 is the caller's: judged (exec-client.ts) or relayed
 * (remote/serve.ts, whose local side judges).
 */
import type { ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { lazyChildProcess } from "../platform/lazy.ts";
import { unlessPeerGone } from "../platform/errno.ts";
import { CONTROL_FD, EVENT_FD, SpawnEnvelope, encodeFrame } from "../protocol/index.ts";
import { selfCommand, selfEnv } from "./self.ts";

/** One of the workload's fd 0-2: a pipe of ours, or this process's own descriptor. */
type WorkloadStdio = "pipe" | "inherit";

export interface SpawnOptions {
  /** The workload's fd 0-2 (default: three pipes). */
  stdio?: readonly [WorkloadStdio, WorkloadStdio, WorkloadStdio];
  /** The program and the words before `exec` (default: this binary, selfCommand()). */
  command?: readonly string[];
  /** The wrapper's environment (default: selfEnv()). */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** A process group of its own: a Ctrl-C on the human's terminal then reaches only the client. */
  detached?: boolean;
  /** Called just before the spawn, once the envelope is encoded (where the bench's clock starts). */
  beforeSpawn?: () => void;
}

/** How the wrapper process itself ended. */
export interface WrapperStatus {
  code: number | null;
  signal: string | null;
}

/** A started `exec`: its process, fd 3 and fd 4. */
interface ExecProcess {
  readonly child: ChildProcess;
  readonly controls: Writable;
  readonly events: Readable;
  /** The wrapper's exit; rejects when it could not be started at all. */
  readonly exited: Promise<WrapperStatus>;
}

/** Spawns `exec --workspace-id W` and writes `envelope` on its fd 3 (fd 3 stays open). */
export function spawnExec(workspaceId: string, envelope: SpawnEnvelope, options: SpawnOptions = {}): ExecProcess {
  const line = encodeFrame(SpawnEnvelope, envelope, "spawn envelope");
  const [program, ...prefix] = options.command ?? selfCommand();
  options.beforeSpawn?.();
  const child = lazyChildProcess().spawn(program!, [...prefix, "exec", "--workspace-id", workspaceId], {
    stdio: [...(options.stdio ?? ["pipe", "pipe", "pipe"]), "pipe", "pipe"],
    env: options.env ?? selfEnv(),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    detached: options.detached ?? false,
  });
  const controls = child.stdio[CONTROL_FD] as Writable;
  // A wrapper that ends early closes its ends of fd 0 and fd 3: its exit status and fd 4 tell why.
  controls.on("error", unlessPeerGone);
  child.stdin?.on("error", unlessPeerGone);
  const exited = new Promise<WrapperStatus>((resolve, reject) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
    child.on("error", reject);
  });
  controls.write(line);
  return { child, controls, events: child.stdio[EVENT_FD] as Readable, exited };
}
