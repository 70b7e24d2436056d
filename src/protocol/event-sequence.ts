import * as v from "valibot";
import type { Mode } from "./describe.ts";
import { ProtocolError } from "./errors.ts";
import type { ProcessEvent } from "./events.ts";
import { SignalName } from "./signal.ts";

/**
 * Judges an fd 4 event stream against SPEC §4: started → (resized)* → eof → exit, with
 * `resized` only in PTY mode and one optional `error` anywhere before exit.
 * The wrapper consults it before every write, end-to-end tests judge the binary with it.
 */
export class EventSequence {
  #started = false;
  #eof = false;
  #exited = false;
  #errored = false;

  constructor(readonly mode: Mode) {}

  /** Throws a ProtocolError naming the violation; otherwise records the event. */
  accept(event: ProcessEvent): void {
    const violation = this.check(event);
    if (violation) throw new ProtocolError(violation);
    this.#record(event);
  }

  /** The violation `event` would be, or null when it is legal next. Does not record. */
  check(event: ProcessEvent): string | null {
    if (this.#exited) return event.type === "exit" ? "duplicate exit event" : `${event.type} event after exit`;
    switch (event.type) {
      case "started":
        return this.#started ? "duplicate started event" : null;
      case "resized":
        if (this.mode !== "pty") return "resized event in pipes mode";
        if (!this.#started) return "resized event before started";
        return this.#eof ? "resized event after eof" : null;
      case "eof":
        if (this.#eof) return "duplicate eof event";
        return this.#started ? null : "eof event before started";
      case "exit":
        if (!this.#started) return "exit event before started";
        if (!this.#eof) return "exit event before eof";
        return checkExitStatus(event.code, event.signal);
      case "error":
        return this.#errored ? "duplicate error event" : null;
    }
  }

  /** Call when the stream ends: throws unless the lifecycle completed with exit. */
  finish(): void {
    if (!this.#exited) throw new ProtocolError(`event stream ended without exit (${this.describe()})`);
  }

  /** True once `exit` was accepted. */
  get complete(): boolean {
    return this.#exited;
  }

  /** True once `started` was accepted. */
  get started(): boolean {
    return this.#started;
  }

  /** True once `eof` was accepted. */
  get eof(): boolean {
    return this.#eof;
  }

  /** True once an `error` event was accepted. */
  get failed(): boolean {
    return this.#errored;
  }

  describe(): string {
    const seen = [this.#started && "started", this.#eof && "eof", this.#errored && "error"].filter(Boolean);
    return seen.length ? `seen: ${seen.join(", ")}` : "nothing seen";
  }

  #record(event: ProcessEvent): void {
    if (event.type === "started") this.#started = true;
    else if (event.type === "eof") this.#eof = true;
    else if (event.type === "exit") this.#exited = true;
    else if (event.type === "error") this.#errored = true;
  }
}

function checkExitStatus(code: number | null, signal: string | null): string | null {
  if ((code === null) === (signal === null)) return "exit event must carry exactly one of code and signal";
  if (code !== null && (code < 0 || code > 255)) return `exit code ${code} is outside 0..255`;
  if (signal !== null && !v.is(SignalName, signal)) return `exit signal ${JSON.stringify(signal)} is not a signal name`;
  return null;
}
