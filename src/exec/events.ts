import { closeSync } from "node:fs";
import type { Invocation } from "../argv.ts";
import { attachUnreadExecLog, logExecRefused } from "../log/call-log.ts";
import { logLine, setLogWorkloadPid } from "../log/runtime-log.ts";
import { writeAll } from "../output.ts";
import { EVENT_FD, EventSequence, ProcessEvent, encodeFrame, type LimitError, type Mode } from "../protocol/index.ts";

/** The wrapper's fd 4 writer: one write per frame, and never an illegal sequence. */
export class EventWriter {
  readonly sequence: EventSequence;
  #closed = false;
  /** Set when the daemon stopped listening (EPIPE and friends); events are then dropped. */
  lost: Error | null = null;

  constructor(
    mode: Mode,
    readonly fd = EVENT_FD,
  ) {
    this.sequence = new EventSequence(mode);
  }

  /** `started` for the workload `pid` (the runtime log's lines carry it from now on). */
  started(pid: number): void {
    setLogWorkloadPid(pid);
    this.#emit({ type: "started", protocolVersion: 1 });
    logLine("debug", "started");
  }

  resized(id: number): void {
    this.#emit({ type: "resized", protocolVersion: 1, id });
  }

  eof(): void {
    this.#emit({ type: "eof", protocolVersion: 1 });
  }

  exit(code: number | null, signal: string | null): void {
    this.#emit({ type: "exit", protocolVersion: 1, code, signal });
    this.close();
  }

  /**
   * At most one error event; later failures are already covered by the first. Every one is
   * in the runtime log: the daemon's copy is the only other trace of a failure after launch.
   */
  error(message: string): void {
    const sent = !(this.sequence.failed || this.sequence.complete);
    if (sent) this.#emit({ type: "error", protocolVersion: 1, message });
    logLine("error", "exec-error", { message, sentToDaemon: sent });
  }

  /** Closes fd 4 so the daemon sees EOF at once, even while the wrapper keeps running. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // #closed makes this the one close of our descriptor: a failure is a real one, and thrown.
    closeSync(this.fd);
  }

  #emit(event: ProcessEvent): void {
    this.sequence.accept(event);
    if (this.#closed || this.lost) return;
    try {
      // One frame, one writeAll: a frame is never interleaved with another.
      writeAll(this.fd, encodeFrame(ProcessEvent, event, "process event"));
    } catch (error) {
      this.lost = error as Error;
    }
  }
}

/**
 * The spawn envelope was refused for its size or nesting before it could be read: no mode and
 * no options are known. The daemon still gets an `error` event (fd 4 is open from the start),
 * and the runtime log of the home the environment selects gets the refusal.
 */
export function refuseUnreadEnvelope(invocation: Invocation, error: LimitError): void {
  attachUnreadExecLog(invocation);
  const events = new EventWriter("pipes");
  events.error(error.message);
  events.close();
  logExecRefused({}, 1, error);
}
