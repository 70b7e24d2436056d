/**
 * The signal table (src/platform/signals.ts) is the daemon's: a name it knows is a name the
 * daemon accepts (Node's os.constants.signals), and nothing else is a signal name.
 */
import { describe, expect, test } from "bun:test";
import { constants } from "node:os";
import { isSignalName, signalNameOf, signalNames, signalNumber } from "../../src/platform/signals.ts";
import { exitBySignal } from "../../src/protocol/index.ts";
import { missingTools } from "../support/tools.ts";

const tableOf = () => Object.fromEntries(signalNames().map((name) => [name, signalNumber(name)]));

describe("the signal table", () => {
  test("is exactly Bun's os.constants.signals, in its order", () => {
    expect(Object.entries(tableOf())).toEqual(Object.entries(constants.signals));
  });

  test.skipIf(missingTools("platform/signals.test.ts, Node's signal table", ["node"]).length > 0)("is exactly Node's os.constants.signals (the daemon's)", () => {
    const node = Bun.spawnSync(["node", "-e", "process.stdout.write(JSON.stringify(require('os').constants.signals))"]);
    expect(node.exitCode).toBe(0);
    expect(Object.entries(tableOf())).toEqual(Object.entries(JSON.parse(node.stdout.toString())));
  });

  test("names only: no number, no real-time signal, no other spelling", () => {
    for (const name of ["SIGTERM", "SIGKILL", "SIGIOT", "SIGPOLL"]) expect(isSignalName(name), name).toBe(true);
    for (const name of ["15", "SIG15", "sigterm", "TERM", "SIGRTMIN", "SIGRTMIN+1", "SIGRTMAX", "SIGNOPE", "", "constructor", "toString"]) expect(isSignalName(name), name).toBe(false);
  });

  test("a number's name is the first the table lists", () => {
    expect(signalNameOf(6)).toBe("SIGABRT");
    expect(signalNameOf(29)).toBe("SIGIO");
    expect(signalNameOf(35)).toBeNull();
  });
});

describe("exit status of a death by signal", () => {
  test("a named signal is reported by its name, an alias by the first name", () => {
    expect(exitBySignal("SIGTERM")).toEqual({ code: null, signal: "SIGTERM" });
    expect(exitBySignal("SIGIOT")).toEqual({ code: null, signal: "SIGABRT" });
    expect(exitBySignal(15)).toEqual({ code: null, signal: "SIGTERM" });
  });

  test("a signal without a name is code 128+n, signal null", () => {
    expect(exitBySignal(35)).toEqual({ code: 163, signal: null });
    expect(exitBySignal(64)).toEqual({ code: 192, signal: null });
  });
});
