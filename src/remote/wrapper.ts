/**
 * `exec` of a `--remote` runtime, the local half. The daemon spawns it exactly like a local
 * wrapper (fd 0–2 the workload's, fd 3 controls, fd 4 events); it opens one ssh session running
 * `exec-remote` on the workspace's host and carries every descriptor over the multiplex of
 * mux.ts. The remote side runs an ordinary remote `exec`, so every exec rule (envelope checks,
 * containment, PTY, signals) is the remote host's own. Here:
 * - fd 4 events pass through unchanged, judged by EventSequence; `eof` and `exit` wait until
 *   the output received before them is written (unless the daemon stopped reading);
 * - SIGINT/SIGTERM/SIGHUP received here go to the remote wrapper, as the daemon's would;
 * - the exit is mirrored; a connection lost before `exit` is an `error` event and exit 1
 *   (the remote side then ends the workload itself);
 * - the local runtime log gets the exec's line (host, outcome, duration) once fd 4 has it.
 */
import type { ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import type { Invocation } from "../argv.ts";
import { ControlReader, readSpawnEnvelope, startWrapper } from "../exec/controls.ts";
import { EventWriter } from "../exec/events.ts";
import { mirrorExit } from "../exec/mirror.ts";
import type { SignalForwarder } from "../exec/signals.ts";
import { addOutcomeFacts, attachExecLog, logExecExited, logExecFailed, logExecRefused } from "../log/call-log.ts";
import { setLogRemote } from "../log/runtime-log.ts";
import { diagnose, writeAll } from "../output.ts";
import { printableLines } from "../printable.ts";
import { lazyChildProcess } from "../platform/lazy.ts";
import { dup2 } from "../platform/libc/descriptors.ts";
import { hasErrno, PEER_GONE, unlessPeerGone } from "../platform/errno.ts";
import { FrameDecoder, ProcessEvent, ProtocolError, SpawnEnvelope, encodeFrame } from "../protocol/index.ts";
import { closeSync, openSync } from "node:fs";
import { hostLogins, hostUrl, logNoReuse, remoteContext, type RemoteCall } from "./context.ts";
import { Channel, MAX_DATA, MuxDecoder, MuxError, MuxType, ReceiveWindow, SendCredit, creditOf, encodeCredit, encodeMux, type MuxFrame } from "./mux.ts";
import { routeWorkspace } from "./placement.ts";
import { FdSink } from "./sink.ts";
import { drainWhileMoving } from "./output-drain.ts";
import { IdleWatch, SSH_FAILED, firstLine, keepaliveMs, sshArgv, type SshSettings } from "./ssh.ts";
import { selfEnv } from "../client/self.ts";
import type { RemoteHost } from "../ssh-url.ts";
import { Hello, WrapperExit, parseWire } from "./wire.ts";

/** How long, after `exit`, we keep draining fd 0 and fd 3 so the daemon's ends are not reset. */
const HANGUP_WAIT_MS = 250;
/** How much of ssh's own stderr is kept for a failure report. */
const MAX_SSH_MESSAGES = 16 * 1024;

/** `exec --workspace-id W` through `--remote`. */
export async function execThroughRemote(call: RemoteCall, invocation: Invocation): Promise<number> {
  const signals = startWrapper();
  // The envelope is decoded here (to route and rewrite it); what follows it on fd 3 travels
  // undecoded (nextBytes), so the remote `exec` judges the controls itself.
  const controls = new ControlReader();
  const envelope = await readSpawnEnvelope(controls, invocation);
  const ctx = remoteContext(call, envelope.options);
  attachExecLog(invocation, envelope, ctx.options);
  logNoReuse(ctx);
  const facts = { mode: envelope.stdio.kind, purpose: envelope.purpose.kind };
  let session: Session;
  let remoteEnvelope: string;
  try {
    const workspaceId = invocation.flags.get("workspace-id")!;
    const host = routeWorkspace(ctx, workspaceId);
    setLogRemote(hostUrl(ctx, host), hostLogins(host));
    remoteEnvelope = encodeFrame(SpawnEnvelope, { ...envelope, options: ctx.remoteSideOptions }, "spawn envelope");
    const words = [host.binary, "exec-remote", "--workspace-id", workspaceId, "--keepalive-ms", String(keepaliveMs(ctx.settings))];
    session = new Session(host, envelope, sshArgv(host, ctx.settings, words), ctx.settings);
  } catch (error) {
    logExecRefused(facts, 1, error);
    throw error;
  }
  try {
    return await session.run(remoteEnvelope, controls, signals);
  } catch (error) {
    logExecFailed(facts, error);
    throw error;
  }
}

/** How the remote exec ended, as far as this side saw it. */
interface Seen {
  hello: boolean;
  /** The remote wrapper's own exit (EXIT frame). */
  wrapper: WrapperExit | null;
  /** The remote side's own failure (ERROR frame), or a failure of the multiplex itself. */
  failure: string | null;
  /** The session showed no progress for the idle timeout and was ended (IdleWatch). */
  stalled: boolean;
}

/** One ssh session carrying one exec. */
class Session {
  readonly #events: EventWriter;
  readonly #stdout = new FdSink(1);
  readonly #stderr = new FdSink(2);
  readonly #stdin = new SendCredit();
  readonly #windows = [new ReceiveWindow(), new ReceiveWindow(), new ReceiveWindow()];
  readonly #decoder = new MuxDecoder("toLocal");
  readonly #eventDecoder = new FrameDecoder(ProcessEvent, "remote fd 4 event");
  readonly #seen: Seen = { hello: false, wrapper: null, failure: null, stalled: false };
  /** Events in mux order; `eof`/`exit` wait for earlier output (see #deliverEvents). */
  #eventQueue: ProcessEvent[] = [];
  #delivering: Promise<void> = Promise.resolve();
  #lastProgress = performance.now();
  #ended = false;
  #sshMessages: Buffer = Buffer.alloc(0);
  /** The `exit` event as delivered: what this wrapper mirrors. */
  #exit: { code: number | null; signal: string | null } = { code: 1, signal: null };
  #ssh!: ChildProcess;

  constructor(
    readonly host: RemoteHost,
    readonly envelope: SpawnEnvelope,
    readonly argv: string[],
    readonly settings: SshSettings,
  ) {
    this.#events = new EventWriter(envelope.stdio.kind);
  }

  async run(remoteEnvelope: string, controls: ControlReader, signals: SignalForwarder): Promise<number> {
    const [program, ...args] = this.argv;
    // Its own process group: a signal meant for us never cuts the connection behind our back.
    this.#ssh = lazyChildProcess().spawn(program!, args, { stdio: ["pipe", "pipe", "pipe"], detached: true, env: selfEnv() });
    const spawned = new Promise<void>((resolve, reject) => {
      this.#ssh.once("spawn", resolve);
      this.#ssh.once("error", reject);
    });
    await spawned;
    const toRemote = this.#ssh.stdin!;
    // ssh ending closes its stdin: the session's end says why.
    toRemote.on("error", unlessPeerGone);
    this.#send(encodeMux(MuxType.OPEN, 0, remoteEnvelope));
    signals.attach((signal) => {
      if (!this.#ended) this.#send(encodeMux(MuxType.SIGNAL, 0, signal));
    });
    const stdinDone = this.#pumpStdin();
    const controlsDone = this.#pumpControls(controls);
    // ssh's own messages (and a remote side that crashed) are not the workload's stderr: they
    // are kept, bounded, and shown only when the exec did not complete.
    this.#ssh.stderr!.on("data", (chunk: Buffer) => {
      if (this.#sshMessages.length < MAX_SSH_MESSAGES) this.#sshMessages = Buffer.concat([this.#sshMessages, chunk]).subarray(0, MAX_SSH_MESSAGES);
    });
    const status = await this.#readRemote();
    this.#ended = true;
    signals.close();
    await this.#delivering;
    await Promise.all([this.#stdout.drained(), this.#stderr.drained()]);
    return await this.#conclude(status, stdinDone, controlsDone);
  }

  #send(frame: Uint8Array): void {
    const stdin = this.#ssh.stdin!;
    if (!stdin.destroyed && !stdin.writableEnded) stdin.write(frame);
  }

  /**
   * Reads the multiplex until ssh ends; returns ssh's exit status. The remote side sends PING
   * frames while it works: a session that shows nothing for the idle timeout is a stalled
   * remote runtime, ended like a broken multiplex (the remote side, once it runs again, finds
   * the session gone and ends the workload).
   */
  async #readRemote(): Promise<number> {
    const stdout = this.#ssh.stdout as Readable;
    const exited = new Promise<number>((resolve) => this.#ssh.once("exit", (code, signal) => resolve(code ?? (signal ? SSH_FAILED : 1))));
    const watch = new IdleWatch(this.host, this.settings, "the remote exec to report", () => {
      this.#seen.stalled = true;
      this.#fail(watch.error().message);
    });
    await new Promise<void>((resolve) => {
      // After a failure nothing more is read: with a shared connection the master holds the
      // session's pipe until the remote command ends, which a stalled one never does.
      this.#stopReading = resolve;
      stdout.on("data", (chunk: Buffer) => {
        watch.progress();
        if (this.#seen.failure !== null) return;
        try {
          if (!this.#seen.hello) this.#checkGreeting(chunk);
          this.#handle(chunk);
        } catch (error) {
          this.#fail((error as Error).message);
        }
      });
      stdout.on("end", resolve);
      stdout.on("error", () => resolve());
    });
    watch.stop();
    if (this.#decoder.pendingBytes > 0 && this.#seen.failure === null) this.#fail(`the multiplex from ${this.host.key} ended inside a frame`);
    const status = await exited;
    this.#ssh.stdin!.destroy();
    return status;
  }

  /** Every frame of `chunk`, in order; a broken frame fails only after the good ones before it. */
  #handle(chunk: Uint8Array): void {
    let frames: MuxFrame[];
    let broken: MuxError | null = null;
    try {
      frames = this.#decoder.push(chunk);
    } catch (error) {
      if (!(error instanceof MuxError)) throw error;
      [frames, broken] = [error.before, error];
    }
    for (const frame of frames) this.#onFrame(frame);
    if (broken) throw broken;
  }

  /** The first bytes must be a HELLO frame; anything else is a remote shell printing at login, or no runtime at all. */
  #checkGreeting(chunk: Buffer): void {
    if (this.#decoder.pendingBytes === 0 && chunk.length > 0 && (chunk[0] !== MuxType.HELLO || (chunk.length > 1 && chunk[1] !== 0))) {
      const shown = JSON.stringify(chunk.subarray(0, 60).toString("latin1"));
      throw new ProtocolError(`${this.host.key} did not start the exec multiplex; its first bytes were ${shown} (a remote shell startup file that prints to stdout breaks it)`);
    }
  }

  #onFrame(frame: MuxFrame): void {
    if (!this.#seen.hello && frame.type !== MuxType.HELLO) throw new ProtocolError(`the first frame from ${this.host.key} must be HELLO`);
    switch (frame.type) {
      case MuxType.HELLO:
        parseWire(Hello, frame.payload, "mux hello");
        this.#seen.hello = true;
        return;
      case MuxType.DATA:
        return this.#onData(frame);
      case MuxType.EOF:
        return this.#onEof(frame.channel);
      case MuxType.CREDIT:
        return this.#stdin.grant(creditOf(frame));
      case MuxType.EXIT:
        this.#seen.wrapper = parseWire(WrapperExit, frame.payload, "mux exit");
        return;
      case MuxType.ERROR:
        // Lenient: free text for the person reading the failure, not data anything acts on.
        this.#seen.failure = `${this.host.key}: ${new TextDecoder().decode(frame.payload)}`;
        return;
      case MuxType.PING:
        // Progress already counted when its bytes arrived.
        return;
    }
  }

  #onData(frame: MuxFrame): void {
    const { channel, payload } = frame;
    if (channel === Channel.EVENTS) {
      for (const event of this.#eventDecoder.push(payload)) this.#eventQueue.push(event);
      this.#delivering = this.#delivering.then(() => this.#deliverEvents());
      return;
    }
    const window = this.#windows[channel]!;
    window.arrived(payload.length, `${this.host.key} channel ${channel}`);
    const sink = channel === Channel.STDOUT ? this.#stdout : this.#stderr;
    void sink.write(payload).then(() => {
      window.written(payload.length);
      this.#lastProgress = performance.now();
      if (!this.#ended) this.#send(encodeCredit(channel, payload.length));
    });
  }

  #onEof(channel: number): void {
    if (channel === Channel.EVENTS) {
      this.#delivering = this.#delivering.then(() => this.#eventDecoder.end());
      return;
    }
    // The daemon sees EOF once what came before is written, as when the workload closes it locally.
    const sink = channel === Channel.STDOUT ? this.#stdout : this.#stderr;
    void sink.drained().then(() => releaseDescriptor(channel));
  }

  /**
   * Writes queued events to fd 4 in order. `eof` and `exit` first wait for the output queued
   * before them, as long as the daemon keeps reading (a stalled reader gets them anyway, like a
   * local PTY wrapper's daemon does).
   */
  async #deliverEvents(): Promise<void> {
    for (let event = this.#eventQueue.shift(); event; event = this.#eventQueue.shift()) {
      if (event.type === "eof" || event.type === "exit") await this.#outputWritten();
      try {
        this.#emit(event);
      } catch (error) {
        this.#fail(`the remote events broke the lifecycle: ${(error as Error).message}`);
      }
    }
  }

  async #outputWritten(): Promise<void> {
    await drainWhileMoving({
      pending: () => this.#stdout.pending > 0 || this.#stderr.pending > 0,
      done: () => Promise.all([this.#stdout.drained(), this.#stderr.drained()]),
      lastProgress: () => this.#lastProgress,
    });
  }

  #emit(event: ProcessEvent): void {
    switch (event.type) {
      case "started":
        // The workload's pid is the remote host's; none of ours stands for it.
        return this.#events.started(0);
      case "resized":
        return this.#events.resized(event.id);
      case "eof":
        return this.#events.eof();
      case "exit":
        this.#exit = { code: event.code, signal: event.signal };
        return this.#events.exit(event.code, event.signal);
      case "error":
        return this.#events.error(event.message);
    }
  }

  /** A broken multiplex: one error event, and the connection cut (the remote side then ends the workload). */
  #fail(message: string): void {
    if (this.#seen.failure !== null) return;
    this.#seen.failure = message;
    if (this.#ssh.exitCode !== null || this.#ssh.signalCode !== null) this.#stopReading();
    else this.#ssh.once("exit", () => this.#stopReading());
    this.#ssh.kill("SIGKILL");
  }

  #stopReading: () => void = () => {};

  /** fd 0 → channel 0, never more than the remote side has room for. */
  async #pumpStdin(): Promise<void> {
    const reader = Bun.file(0).stream().getReader();
    try {
      for (;;) {
        await this.#stdin.wait();
        if (this.#ended) return;
        const { done, value } = await reader.read();
        if (this.#ended) return;
        if (done) return this.#send(encodeMux(MuxType.EOF, Channel.STDIN));
        for (let at = 0; at < value.length; ) {
          await this.#stdin.wait();
          if (this.#ended) return;
          const n = this.#stdin.take(value.length - at);
          this.#send(encodeMux(MuxType.DATA, Channel.STDIN, value.subarray(at, at + n)));
          at += n;
        }
      }
    } catch (error) {
      // fd 0 failing is the daemon going away; the workload's fate is decided by the remote side.
      if (!hasErrno(error, PEER_GONE)) throw error;
    } finally {
      reader.releaseLock();
    }
  }

  /** fd 3 after the envelope → channel 3, unchanged. */
  async #pumpControls(controls: ControlReader): Promise<void> {
    for (let chunk = await controls.nextBytes(); chunk; chunk = await controls.nextBytes()) {
      for (let at = 0; at < chunk.length; at += MAX_DATA) {
        if (!this.#ended) this.#send(encodeMux(MuxType.DATA, Channel.CONTROLS, chunk.subarray(at, at + MAX_DATA)));
      }
    }
    if (!this.#ended) this.#send(encodeMux(MuxType.EOF, Channel.CONTROLS));
  }

  /** Reports how it ended and returns (or dies by) the status the daemon should see. */
  async #conclude(sshStatus: number, stdinDone: Promise<void>, controlsDone: Promise<void>): Promise<number> {
    const { hello, wrapper, failure, stalled } = this.#seen;
    const sequence = this.#events.sequence;
    const clean = failure === null && (sequence.complete || wrapper !== null);
    if (!clean && this.#sshMessages.length > 0) writeAll(2, printableLines(new TextDecoder().decode(this.#sshMessages)));
    if (!sequence.complete) {
      const lost = failure ?? (hello && wrapper === null ? `lost the connection to ${this.host.key} before the remote exec ended (ssh exit ${sshStatus}); the remote side ends the workload` : null);
      // Before the greeting a failure is a refusal (nothing ran), unless the remote side stalled.
      if (lost !== null && (hello || sequence.started || stalled)) this.#events.error(lost);
      this.#events.close();
      if (lost !== null) diagnose(`exec ${this.envelope.execId} on ${this.host.key}: ${lost}`);
    }
    await Promise.race([Promise.all([stdinDone, controlsDone]), Bun.sleep(HANGUP_WAIT_MS)]);
    const facts = { mode: this.envelope.stdio.kind, purpose: this.envelope.purpose.kind };
    if (sequence.complete && failure === null) {
      logExecExited(facts, this.#exit.code, this.#exit.signal);
      return await mirrorExit(this.#exit.code, this.#exit.signal);
    }
    if (failure !== null || (hello && wrapper === null)) {
      logExecFailed(facts, new Error(failure ?? `lost the connection to ${this.host.key} before the remote exec ended (ssh exit ${sshStatus})`));
      return 1;
    }
    if (wrapper !== null) {
      // The remote wrapper ended without a complete lifecycle (its reason went to stderr).
      const ended = `the remote exec wrapper ended ${wrapper.signal ? `by ${wrapper.signal}` : `with exit ${wrapper.code}`}`;
      if (sequence.started) logExecFailed(facts, new Error(`${ended} before the workload's exit`));
      else logExecRefused(facts, wrapper.code ?? 1, new Error(`${ended}, nothing launched`));
      return await mirrorExit(wrapper.code, wrapper.signal);
    }
    if (sshStatus === 127) {
      diagnose(`${this.host.key}: the remote shell could not run ${JSON.stringify(this.host.binary)} (exit 127); install paseo-host-runtime there or name its path in the URL`);
      logExecRefused(facts, 127, new Error(`the remote shell could not run ${JSON.stringify(this.host.binary)}`));
      return 127;
    }
    diagnose(`exec on ${this.host.key} could not start: ssh exited ${sshStatus}${sshStatus === SSH_FAILED ? " (the host was not reached or refused us; ssh's message, if any, is above)" : ""}`);
    if (sshStatus === SSH_FAILED) addOutcomeFacts({ sshStatus });
    const why = firstLine(new TextDecoder().decode(this.#sshMessages));
    logExecRefused(facts, 1, new Error(why ?? `ssh exited ${sshStatus} without a message`));
    return 1;
  }
}

/** Points a descriptor at /dev/null so the daemon sees EOF now, and no later open reuses the number. */
function releaseDescriptor(fd: number): void {
  const devNull = openSync("/dev/null", "r+");
  dup2(devNull, fd);
  closeSync(devNull);
}
