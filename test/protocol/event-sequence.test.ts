/**
 * fd 4 lifecycle (contract + SPEC §4): "started -> eof -> exit"; "A PTY may send resized
 * acknowledgements only after started and before eof; pipes may never send them.
 * Duplicate, out-of-order, wrong-mode, or post-exit events are fatal."
 */
import { describe, expect, test } from "bun:test";
import { EventSequence, ProtocolError, type Mode, type ProcessEvent } from "../../src/protocol/index.ts";

const started: ProcessEvent = { type: "started", protocolVersion: 1 };
const eof: ProcessEvent = { type: "eof", protocolVersion: 1 };
const resized = (id: number): ProcessEvent => ({ type: "resized", protocolVersion: 1, id });
const exit = (code: number | null, signal: string | null = null): ProcessEvent => ({ type: "exit", protocolVersion: 1, code, signal });
const error: ProcessEvent = { type: "error", protocolVersion: 1, message: "runtime control failed" };
const exited = exit(0);

/** Runs `events` through a fresh checker and finishes it; returns the first violation or null. */
function judge(mode: Mode, events: ProcessEvent[]): string | null {
  const sequence = new EventSequence(mode);
  try {
    for (const event of events) sequence.accept(event);
    sequence.finish();
    return null;
  } catch (caught) {
    expect(caught).toBeInstanceOf(ProtocolError);
    return (caught as Error).message;
  }
}

describe("legal sequences are accepted", () => {
  const legal: [string, Mode, ProcessEvent[]][] = [
    ["pipes: started, eof, exit 0", "pipes", [started, eof, exited]],
    ["pipes: exit by signal", "pipes", [started, eof, exit(null, "SIGTERM")]],
    ["pipes: exit by a signal's other name of the table", "pipes", [started, eof, exit(null, "SIGIOT")]],
    ["pipes: a real-time signal death, as the daemon can take it", "pipes", [started, eof, exit(163)]],
    ["pipes: exit code 255", "pipes", [started, eof, exit(255)]],
    ["pty: started, eof, exit", "pty", [started, eof, exit(9)]],
    ["pty: resized acknowledgements between started and eof", "pty", [started, resized(1), resized(2), eof, exit(null, "SIGKILL")]],
    ["pty: resized id 0", "pty", [started, resized(0), eof, exited]],
    ["error first, then the whole lifecycle", "pipes", [error, started, eof, exited]],
    ["error after started, then eof and exit", "pipes", [started, error, eof, exited]],
    ["error between eof and exit", "pty", [started, resized(1), eof, error, exited]],
  ];

  test.each(legal)("%s", (_, mode, events) => {
    expect(judge(mode, events)).toBeNull();
  });

  test("state getters follow the stream", () => {
    const sequence = new EventSequence("pty");
    expect([sequence.started, sequence.eof, sequence.complete, sequence.failed]).toEqual([false, false, false, false]);
    sequence.accept(started);
    sequence.accept(error);
    sequence.accept(eof);
    expect([sequence.started, sequence.eof, sequence.complete, sequence.failed]).toEqual([true, true, false, true]);
    sequence.accept(exited);
    expect(sequence.complete).toBe(true);
  });

  test("check() judges without recording", () => {
    const sequence = new EventSequence("pipes");
    expect(sequence.check(started)).toBeNull();
    expect(sequence.check(started)).toBeNull();
    expect(sequence.started).toBe(false);
  });
});

describe("each violation is rejected with its own message", () => {
  const violations: [string, Mode, ProcessEvent[], string][] = [
    ["duplicate started", "pipes", [started, started], "duplicate started event"],
    ["duplicate eof", "pipes", [started, eof, eof], "duplicate eof event"],
    ["duplicate exit", "pipes", [started, eof, exited, exited], "duplicate exit event"],
    ["duplicate error", "pipes", [started, error, error], "duplicate error event"],
    ["eof before started", "pipes", [eof], "eof event before started"],
    ["exit before started", "pipes", [exited], "exit event before started"],
    ["exit before eof", "pipes", [started, exited], "exit event before eof"],
    ["started after exit", "pipes", [started, eof, exited, started], "started event after exit"],
    ["eof after exit", "pipes", [started, eof, exited, eof], "eof event after exit"],
    ["error after exit", "pipes", [started, eof, exited, error], "error event after exit"],
    ["resized after exit", "pty", [started, eof, exited, resized(1)], "resized event after exit"],
    ["resized in pipes mode", "pipes", [started, resized(1)], "resized event in pipes mode"],
    ["resized before started", "pty", [resized(1)], "resized event before started"],
    ["resized after eof", "pty", [started, eof, resized(1)], "resized event after eof"],
    ["exit with both code and signal", "pipes", [started, eof, exit(0, "SIGTERM")], "exit event must carry exactly one of code and signal"],
    ["exit with neither code nor signal", "pipes", [started, eof, exit(null, null)], "exit event must carry exactly one of code and signal"],
    ["exit code above 255", "pipes", [started, eof, exit(256)], "exit code 256 is outside 0..255"],
    ["negative exit code", "pipes", [started, eof, exit(-1)], "exit code -1 is outside 0..255"],
    ["numeric signal", "pipes", [started, eof, exit(null, "15")], 'exit signal "15" is not a signal name'],
    ["numeric-looking signal name", "pipes", [started, eof, exit(null, "SIG15")], 'exit signal "SIG15" is not a signal name'],
    ["lower-case signal name", "pipes", [started, eof, exit(null, "sigterm")], 'exit signal "sigterm" is not a signal name'],
    ["signal without the SIG prefix", "pipes", [started, eof, exit(null, "TERM")], 'exit signal "TERM" is not a signal name'],
    // The daemon knows only os.constants.signals: a real-time signal has no name there.
    ["a real-time signal's name", "pipes", [started, eof, exit(null, "SIGRTMIN")], 'exit signal "SIGRTMIN" is not a signal name'],
    ["a real-time signal by offset", "pty", [started, eof, exit(null, "SIGRTMIN+1")], 'exit signal "SIGRTMIN+1" is not a signal name'],
    ["a name no platform has", "pipes", [started, eof, exit(null, "SIGNOPE")], 'exit signal "SIGNOPE" is not a signal name'],
  ];

  test.each(violations)("%s", (_, mode, events, message) => {
    expect(judge(mode, events)).toBe(message);
  });

  test("the messages are all different", () => {
    const distinct = new Set(violations.filter(([name]) => !name.startsWith("exit with")).map(([, , , message]) => message));
    expect(distinct.size).toBe(violations.length - 2);
  });

  test("a rejected event is not recorded", () => {
    const sequence = new EventSequence("pipes");
    expect(() => sequence.accept(exited)).toThrow("exit event before started");
    expect(sequence.complete).toBe(false);
    sequence.accept(started);
    sequence.accept(eof);
    sequence.accept(exited);
    sequence.finish();
  });
});

describe("a stream that ends without exit is rejected by finish()", () => {
  test.each([
    ["nothing at all", [], "event stream ended without exit (nothing seen)"],
    ["only started", [started], "event stream ended without exit (seen: started)"],
    ["started and eof", [started, eof], "event stream ended without exit (seen: started, eof)"],
    ["an error and nothing else", [error], "event stream ended without exit (seen: error)"],
  ] as [string, ProcessEvent[], string][])("%s", (_, events, message) => {
    expect(judge("pipes", events)).toBe(message);
  });
});
