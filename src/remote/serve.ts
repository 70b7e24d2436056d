/**
 * `exec-remote`, the remote half of a remote exec (see wrapper.ts). It acts as the daemon for
 * an ordinary `exec` of this same binary, started by the daemon-side client (src/client/spawn.ts:
 * five pipes, the envelope on fd 3); its fd 4 events are relayed, not judged: the local side
 * judges them. Its own stdin/stdout are the ssh session, carrying the multiplex of mux.ts.
 *
 * When the session ends before the exec did (connection dropped, local wrapper killed), nobody
 * is left to see the workload, so it is ended here: the `signal … SIGKILL` operation for its
 * exec id, then SIGKILL for the wrapper, exactly the daemon's own cleanup.
 */
import type { ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { killExecution } from "../client/cleanup.ts";
import { spawnExec } from "../client/spawn.ts";
import { isSignalName } from "../platform/signals.ts";
import { unlessPeerGone } from "../platform/errno.ts";
import { CONTROL_FD, FrameDecoder, ProcessEvent, ProtocolError, SpawnEnvelope, decodeOwnOutput, encodeFrame, parseMessage } from "../protocol/index.ts";
import { VERSION } from "../version.ts";
import { Channel, MuxDecoder, MuxType, SendCredit, encodeCredit, encodeMux, creditOf, type MuxFrame } from "./mux.ts";
import { FdSink } from "./sink.ts";
import { drainWhileMoving } from "./output-drain.ts";
import type { WrapperExit } from "./wire.ts";

/** After `eof`, how long events wait at most for the rest of the output (a stray process may hold stdout open). */
const OUTPUT_MAX_MS = 2000;
/** On a lost session before `started`: how long the wrapper may take to launch (then it is killed). */
const LAUNCH_WAIT_MS = 5000;
/** The cleanup `signal` operation's budget. */
const CLEANUP_MS = 10_000;

/**
 * `exec-remote --workspace-id W [--keepalive-ms N]`. Returns when the remote exec (and its
 * cleanup) is over. With N, a PING frame every N ms tells the local side this side still works
 * (it ends a session that shows no progress: src/remote/ssh.ts IdleWatch).
 */
export async function serveExec(workspaceId: string, keepaliveMs: number | null): Promise<number> {
  const server = new Server(workspaceId);
  const pings = keepaliveMs === null ? null : setInterval(() => server.ping(), keepaliveMs);
  try {
    return await server.run();
  } finally {
    if (pings) clearInterval(pings);
  }
}

/** A credited output channel of the remote exec (its stdout or stderr) going to the local side. */
class Output {
  readonly credit = new SendCredit();
  #held: Uint8Array | null = null;
  ended = false;
  readonly done: Promise<void>;
  #onProgress: () => void;

  #streamEnded = false;
  #resolveDone: () => void = () => {};

  constructor(
    readonly channel: number,
    readonly stream: Readable,
    readonly send: (frame: Uint8Array) => void,
    onProgress: () => void,
  ) {
    this.#onProgress = onProgress;
    this.done = new Promise((resolve) => (this.#resolveDone = resolve));
    stream.on("data", (chunk: Buffer) => this.#onData(chunk));
    stream.on("end", () => this.#endOfStream());
    stream.on("error", () => this.#endOfStream());
  }

  /** `ended` only once every byte went out: bytes still held for credit come before EOF. */
  #endOfStream(): void {
    this.#streamEnded = true;
    this.#checkEnded();
  }

  #checkEnded(): void {
    if (this.ended || !this.#streamEnded || this.#held) return;
    this.ended = true;
    this.#resolveDone();
  }

  #onData(chunk: Uint8Array): void {
    // A chunk already read when the stream was paused joins what is held.
    if (this.#held) this.#held = Buffer.concat([this.#held, chunk]);
    else this.#forward(chunk);
  }

  /** Sends as much as credit allows; the rest is held and the stream paused until credit returns. */
  #forward(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length) {
      const n = this.credit.take(chunk.length - at);
      if (n === 0) break;
      this.send(encodeMux(MuxType.DATA, this.channel, chunk.subarray(at, at + n)));
      at += n;
    }
    this.#onProgress();
    if (at < chunk.length) {
      this.#held = chunk.slice(at);
      this.stream.pause();
    }
  }

  granted(bytes: number): void {
    this.credit.grant(bytes);
    const held = this.#held;
    if (!held) return;
    this.#held = null;
    this.#forward(held);
    if (!this.#held) {
      this.stream.resume();
      this.#checkEnded();
    }
  }
}

class Server {
  readonly #out = new FdSink(1);
  readonly #decoder = new MuxDecoder("toRemote");
  #child: ChildProcess | null = null;
  #envelope: SpawnEnvelope | null = null;
  #started = false;
  #startedWaiters: (() => void)[] = [];
  #childExit: Promise<WrapperExit> | null = null;
  #markOpened: () => void = () => {};
  readonly #opened = new Promise<void>((resolve) => (this.#markOpened = resolve));
  #exited = false;
  #heldSignals: NodeJS.Signals[] = [];
  #outputs: Output[] = [];
  #lastOutput = performance.now();
  /** Events after `eof`, held until the output before them is sent (see #releaseEvents). */
  #heldEvents: ProcessEvent[] = [];
  #eofSeen = false;
  #sessionOver = false;
  #abandoning: Promise<void> | null = null;

  constructor(readonly workspaceId: string) {}

  #send(frame: Uint8Array): void {
    if (!this.#sessionOver) void this.#out.write(frame);
  }

  /** A keepalive, while nothing else waits to go out (a queue means the local side is behind, not us). */
  ping(): void {
    if (this.#out.pending === 0) this.#send(encodeMux(MuxType.PING, 0));
  }

  async run(): Promise<number> {
    // The session may be cut at any time; a vanished reader must not kill us before cleanup.
    process.on("SIGPIPE", () => {});
    for (const signal of ["SIGHUP", "SIGTERM", "SIGINT"] as const) process.on(signal, () => void this.#abandon());
    this.#send(encodeMux(MuxType.HELLO, 0, JSON.stringify({ mux: 1, version: VERSION })));
    const input = this.#readSession();
    const finished = await Promise.race([input.then(() => "session" as const), this.#whenFinished().then(() => "exec" as const)]);
    if (finished === "session" && !this.#exited) await this.#abandon();
    await this.#abandoning;
    await this.#out.drained();
    return 0;
  }

  /** Reads the multiplex from ssh until it ends. */
  async #readSession(): Promise<void> {
    const reader = Bun.file(0).stream().getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const frame of this.#decoder.push(value)) this.#onFrame(frame);
      }
    } catch (error) {
      this.#fatal((error as Error).message);
    }
  }

  #onFrame(frame: MuxFrame): void {
    if (!this.#envelope && frame.type !== MuxType.OPEN) throw new ProtocolError("the first frame must be OPEN");
    switch (frame.type) {
      case MuxType.OPEN:
        if (this.#envelope) throw new ProtocolError("a second OPEN frame");
        return this.#open(frame.payload);
      case MuxType.DATA:
        return this.#toChild(frame.channel, frame.payload);
      case MuxType.EOF:
        return this.#endChild(frame.channel);
      case MuxType.CREDIT:
        return this.#outputs.find((output) => output.channel === frame.channel)?.granted(creditOf(frame));
      case MuxType.SIGNAL:
        // Lenient is enough: a name outside the signal table (U+FFFD included) is refused in #signal.
        return this.#signal(new TextDecoder().decode(frame.payload));
    }
  }

  /** Starts the remote `exec` the way the daemon does, and writes it the envelope. */
  #open(payload: Uint8Array): void {
    const line = decodeOwnOutput(payload, "remote spawn envelope");
    this.#envelope = parseMessage(SpawnEnvelope, line.endsWith("\n") ? line.slice(0, -1) : line, "remote spawn envelope");
    const exec = spawnExec(this.workspaceId, this.#envelope, { cwd: "/", detached: true });
    const child = exec.child;
    this.#child = child;
    this.#childExit = exec.exited.then(
      (status) => {
        this.#exited = true;
        return status;
      },
      (error: Error) => {
        this.#exited = true;
        this.#fatal(`cannot start exec: ${error.message}`);
        return { code: 1, signal: null };
      },
    );
    const progress = () => (this.#lastOutput = performance.now());
    this.#outputs = [new Output(Channel.STDOUT, child.stdout!, (f) => this.#send(f), progress), new Output(Channel.STDERR, child.stderr!, (f) => this.#send(f), progress)];
    this.#readEvents(exec.events);
    this.#markOpened();
  }

  #toChild(channel: number, payload: Uint8Array): void {
    const child = this.#child!;
    if (channel === Channel.STDIN) {
      // Credit goes back once the bytes are in the workload's pipe, not before.
      child.stdin!.write(payload, () => this.#send(encodeCredit(Channel.STDIN, payload.length)));
    } else {
      (child.stdio[CONTROL_FD] as Writable).write(payload);
    }
  }

  #endChild(channel: number): void {
    const stream = (channel === Channel.STDIN ? this.#child!.stdin : this.#child!.stdio[CONTROL_FD]) as Writable;
    stream.end();
  }

  /** A signal from the local wrapper goes to the remote wrapper, held (like the daemon holds it) until `started`. */
  #signal(name: string): void {
    if (!isSignalName(name)) throw new ProtocolError(`mux SIGNAL frame with unknown signal ${JSON.stringify(name)}`);
    if (!this.#started) this.#heldSignals.push(name);
    else if (!this.#exited) this.#child!.kill(name);
  }

  /** fd 4 of the remote `exec`: judged only enough to know `started` and `eof`, then sent on. */
  #readEvents(stream: Readable): void {
    const decoder = new FrameDecoder(ProcessEvent, "remote exec fd 4 event");
    stream.on("data", (chunk: Buffer) => {
      let events: ProcessEvent[];
      try {
        events = decoder.push(chunk);
      } catch (error) {
        // Broken events of the remote exec travel as they are: the local side judges them.
        if (!(error instanceof ProtocolError)) throw error;
        this.#send(encodeMux(MuxType.DATA, Channel.EVENTS, chunk));
        return;
      }
      for (const event of events) this.#onEvent(event);
    });
    stream.on("end", () => void this.#releaseEvents().then(() => this.#send(encodeMux(MuxType.EOF, Channel.EVENTS))));
    // The remote exec ending with unread events closes its end: its exit says why.
    stream.on("error", unlessPeerGone);
  }

  #onEvent(event: ProcessEvent): void {
    if (event.type === "started") {
      this.#started = true;
      for (const waiter of this.#startedWaiters.splice(0)) waiter();
      for (const signal of this.#heldSignals.splice(0)) if (!this.#exited) this.#child!.kill(signal);
    }
    if (event.type === "eof") this.#eofSeen = true;
    if (this.#eofSeen) {
      this.#heldEvents.push(event);
      void this.#releaseEvents();
      return;
    }
    this.#sendEvent(event);
  }

  #sendEvent(event: ProcessEvent): void {
    this.#send(encodeMux(MuxType.DATA, Channel.EVENTS, encodeFrame(ProcessEvent, event, "process event")));
  }

  #releasing: Promise<void> | null = null;

  /**
   * `eof` and what follows wait until the workload's output reached EOF, so the local side
   * gets every byte before `eof`; but only while output keeps moving (a stalled daemon gets
   * them anyway), and at most OUTPUT_MAX_MS (a stray process holding stdout open).
   */
  #releaseEvents(): Promise<void> {
    this.#releasing ??= drainWhileMoving(
      {
        pending: () => this.#outputs.some((output) => !output.ended),
        done: () => Promise.all(this.#outputs.map((output) => output.done)),
        lastProgress: () => this.#lastOutput,
      },
      OUTPUT_MAX_MS,
    );
    return this.#releasing.then(() => {
      for (const event of this.#heldEvents.splice(0)) this.#sendEvent(event);
    });
  }

  /** Resolves once the remote exec exited and its descriptors are done; sends EXIT. */
  async #whenFinished(): Promise<void> {
    await this.#opened;
    const status = await this.#childExit!;
    await this.#releaseEvents();
    await Promise.race([Promise.all(this.#outputs.map((output) => output.done)), Bun.sleep(OUTPUT_MAX_MS)]);
    for (const output of this.#outputs) if (output.ended) this.#send(encodeMux(MuxType.EOF, output.channel));
    this.#send(encodeMux(MuxType.EXIT, 0, JSON.stringify(status)));
  }

  /** The remote side itself failed: say so (if anyone listens) and end the exec. */
  #fatal(message: string): void {
    this.#send(encodeMux(MuxType.ERROR, 0, message));
    void this.#abandon();
  }

  /**
   * The session is gone (or broken) before the exec ended: end the workload ourselves. Before
   * `started` the wrapper may be launching: give it the time to record the identity or fail.
   */
  #abandon(): Promise<void> {
    this.#abandoning ??= (async () => {
      this.#sessionOver = true;
      const child = this.#child;
      if (!child || this.#exited) return;
      if (!this.#started) {
        await Promise.race([new Promise<void>((resolve) => this.#startedWaiters.push(resolve)), this.#childExit, Bun.sleep(LAUNCH_WAIT_MS)]);
      }
      if (this.#started && !this.#exited) await killExecution(this.workspaceId, this.#envelope!, { budgetMs: CLEANUP_MS });
      if (!this.#exited) child.kill("SIGKILL");
      await this.#childExit;
    })();
    return this.#abandoning;
  }

}
