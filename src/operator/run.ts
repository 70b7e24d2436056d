/**
 * `run`: a human's client for `exec`. It starts `exec` of this same binary exactly as the
 * Paseo daemon does, through the daemon-side client (src/client/: five pipes, the spawn
 * envelope on fd 3, fd 4 events judged by the lifecycle checker, resizes one at a time), so
 * what works here works for the daemon. It exits with the workload's code or dies by its
 * signal. The envelope its flags describe is run-envelope.ts; the raw terminal raw-terminal.ts.
 */
import { hasErrno, PEER_GONE, TERMINAL_HUNG_UP, tolerating } from "../platform/errno.ts";
import { UsageError, type Invocation } from "../argv.ts";
import { ExecClient, type Ending } from "../client/exec-client.ts";
import { ResizeQueue } from "../client/resize.ts";
import { mirrorExit } from "../exec/mirror.ts";
import { DAEMON_SIGNALS } from "../exec/signals.ts";
import { diagnose, writeAll } from "../output.ts";
import { SignalControl, encodeFrame, type SpawnEnvelope } from "../protocol/index.ts";
import { operationArgv0, operationCommand, shellQuote, suggestion } from "./common.ts";
import { RawTerminal, terminalSize } from "./raw-terminal.ts";
import { buildEnvelope } from "./run-envelope.ts";
import { recordForRun } from "./workspace-facts.ts";
import { remoteRuntime } from "./remote-hosts.ts";
import { warnOtherVersions } from "./remote-version.ts";
import { routeWorkspace } from "../remote/placement.ts";
import { selection } from "./selection.ts";

/** The daemon's budget for the `signal … SIGKILL` cleanup after a protocol failure. */
const CLEANUP_MS = 1000;

/** Pipes mode: the workload uses the human's own fd 0/1/2; signals go to the wrapper pid. */
function runPipes(workspaceId: string, envelope: SpawnEnvelope): Promise<Ending> {
  const held: NodeJS.Signals[] = [];
  let client: ExecClient | null = null;
  const forward = (signal: NodeJS.Signals) => {
    // Like the daemon: hold signals until `started`, never signal a finished wrapper.
    if (!client?.sequence.started) held.push(signal);
    else if (!client.sequence.complete && client.child.exitCode === null) client.child.kill(signal);
  };
  for (const signal of DAEMON_SIGNALS) process.on(signal, () => forward(signal));
  // detached: the wrapper leaves our process group, so a Ctrl-C on the human's terminal
  // reaches only `run`, which forwards it once, as the daemon would.
  client = new ExecClient(workspaceId, envelope, { stdio: ["inherit", "inherit", "inherit"], detached: true, command: operationCommand() });
  client.closeControls();
  client.onEvent((event) => {
    if (event.type === "started") for (const signal of held.splice(0)) forward(signal);
  });
  return finish(client);
}

/**
 * PTY mode: local keys are copied to fd 0 (held while a resize awaits its ack), fd 1 is the
 * workload's raw terminal output, SIGWINCH becomes resize frames one at a time, and
 * SIGINT/SIGTERM/SIGHUP sent to `run` become signal frames.
 */
async function runPty(workspaceId: string, envelope: SpawnEnvelope, terminal: RawTerminal): Promise<Ending> {
  // Handlers first: a signal landing before them would kill `run` and orphan the wrapper.
  // Frames are not held until `started`: the wrapper queues early ones itself.
  const early: NodeJS.Signals[] = [];
  let client: ExecClient | null = null;
  const sendSignal = (signal: NodeJS.Signals) => {
    if (!client) early.push(signal);
    else client.control(encodeFrame(SignalControl, { type: "signal", protocolVersion: 1, signal }, "signal control"));
  };
  for (const signal of DAEMON_SIGNALS) process.on(signal, () => sendSignal(signal));
  terminal.enable();
  client = new ExecClient(workspaceId, envelope, { detached: true, command: operationCommand() });
  early.splice(0).forEach(sendSignal);
  const resizes = new ResizeQueue(client, envelope.stdio as { rows: number; cols: number });
  process.on("SIGWINCH", () => resizes.request(terminalSize()));

  const input = client.child.stdin!;
  const stdin = process.stdin;
  const copyIn = (chunk: Buffer) => {
    if (resizes.waiting) resizes.hold(chunk);
    else if (!input.write(chunk)) {
      stdin.pause();
      input.once("drain", () => stdin.resume());
    }
  };
  resizes.onRelease((chunks) => chunks.forEach(copyIn));
  stdin.on("data", copyIn);
  stdin.on("end", () => resizes.whenIdle(() => input.end()));
  // The operator's terminal hung up (EIO) or its pipe closed: the workload sees its stdin end.
  stdin.on("error", (error) => {
    if (!hasErrno(error, [...PEER_GONE, ...TERMINAL_HUNG_UP])) throw error;
    input.end();
  });

  const outputDone = new Promise<void>((resolve) => {
    // A hung-up terminal cannot take output any more; keep draining so the wrapper never blocks.
    let terminalGone = false;
    client.child.stdout!.on("data", (chunk: Buffer) => {
      if (terminalGone) return;
      try {
        writeAll(1, chunk);
      } catch (error) {
        // The terminal hung up (EIO) or our stdout's reader left: drain on, show nothing more.
        if (!hasErrno(error, [...PEER_GONE, ...TERMINAL_HUNG_UP])) throw error;
        terminalGone = true;
      }
    });
    client.child.stdout!.on("end", resolve);
    client.child.stdout!.on("error", () => resolve());
  });
  client.child.stderr!.on("data", (chunk: Buffer) => {
    // stderr is gone with the terminal (EIO) or its reader: the exit status still tells.
    tolerating([...PEER_GONE, ...TERMINAL_HUNG_UP], undefined, () => writeAll(2, terminal.raw ? chunk.toString().replace(/\r?\n/g, "\r\n") : chunk));
  });
  client.onEvent((event) => {
    if (event.type === "exit") client.closeControls();
  });

  const ending = await finish(client);
  await outputDone;
  resizes.stop();
  stdin.removeAllListeners("data");
  stdin.pause();
  client.closeControls();
  return ending;
}

/** Waits for the wrapper and its events; after a protocol failure, cleans up like the daemon. */
async function finish(client: ExecClient): Promise<Ending> {
  const ending = await client.ended;
  if (ending.violation !== null) await client.cleanUp({ budgetMs: CLEANUP_MS, argv0: operationArgv0(), command: operationCommand() });
  return ending;
}

/** What a captured exec printed and how it ended (see captureExec). */
interface CapturedExec {
  stdout: string;
  stderr: string;
  /** The fd 4 exit, when the lifecycle completed. */
  exit: Ending["exit"];
  /** Why it failed as a protocol exchange or before launch, or null. */
  failure: string | null;
}

/**
 * Runs one non-interactive exec the way the daemon does (stdin closed at once, stdout and
 * stderr collected), SIGKILLing it after `timeoutMs`. For doctor's helper check.
 */
export async function captureExec(workspaceId: string, envelope: SpawnEnvelope, timeoutMs: number): Promise<CapturedExec> {
  const client = new ExecClient(workspaceId, envelope, { detached: true, killOnViolation: true });
  client.closeControls();
  client.child.stdin?.end();
  const chunks: Record<"stdout" | "stderr", Buffer[]> = { stdout: [], stderr: [] };
  client.child.stdout!.on("data", (chunk: Buffer) => chunks.stdout.push(chunk));
  client.child.stderr!.on("data", (chunk: Buffer) => chunks.stderr.push(chunk));
  const timer = setTimeout(() => client.fail(`no exit within ${timeoutMs} ms`), timeoutMs);
  let ending: Ending;
  try {
    ending = await finish(client);
  } finally {
    clearTimeout(timer);
  }
  const stderr = Buffer.concat(chunks.stderr).toString().trim();
  let failure = ending.violation ?? ending.error;
  if (failure === null && !ending.started) failure = stderr || `exec ended (${ending.wrapper.signal ?? `exit ${ending.wrapper.code}`}) without starting`;
  return { stdout: Buffer.concat(chunks.stdout).toString(), stderr, exit: ending.exit, failure };
}

/** `run --workspace-id W [--pty] [--cwd REL] [--env K=V]... [--inherit-env] [--purpose KIND] [--helper-path PATH] -- ARGV...` */
export async function run(invocation: Invocation): Promise<number> {
  const pty = invocation.switches.has("pty");
  const chosen = selection(invocation);
  if (chosen.remote !== null) {
    const runtime = await remoteRuntime(chosen);
    await warnOtherVersions("run", [routeWorkspace(runtime.ctx, invocation.flags.get("workspace-id")!)], runtime.ctx.settings);
  }
  const record = await recordForRun(invocation, invocation.flags.get("workspace-id")!);
  const envelope = buildEnvelope(invocation, pty, record);
  if (typeof envelope === "string") throw new UsageError(envelope, invocation.command);
  const workspaceId = invocation.flags.get("workspace-id")!;
  const terminal = new RawTerminal();
  let ending: Ending;
  try {
    ending = pty ? await runPty(workspaceId, envelope, terminal) : await runPipes(workspaceId, envelope);
  } finally {
    terminal.restore();
  }
  if (ending.violation !== null) {
    diagnose(`run: exec protocol failure: ${ending.violation} (execution ${envelope.execId} was cleaned up)`);
    return 1;
  }
  if (ending.error !== null) {
    diagnose(`run: the runtime reported an error: ${ending.error}`);
    return 1;
  }
  if (!ending.started) {
    // exec refused before launching anything (paused, missing, bad cwd, program not found):
    // its own diagnostic is already on stderr; keep its status (127 = not found, as a shell).
    const { code, signal } = ending.wrapper;
    if (code === 127 && envelope.env.PATH === undefined && !envelope.argv[0]!.includes("/") && envelope.purpose.kind !== "workspace-helper") {
      diagnose("run: the workload env is empty unless you ask: add --env PATH=/usr/bin:/bin, --inherit-env, or give an absolute program path");
    }
    if (record?.status === "paused") diagnose(`run: resume it first: ${suggestion(invocation, `workspace resume -w ${shellQuote(workspaceId)}`)}`);
    if (code !== null && code !== 0) return code;
    diagnose(`run: exec ended (${signal ?? `exit ${code}`}) without starting the workload`);
    return 1;
  }
  const exit = ending.exit!;
  return await mirrorExit(exit.code, exit.signal);
}
