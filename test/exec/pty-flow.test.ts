/**
 * Stopping a terminal's output loses nothing. The wrapper suspends PTY output while fd 1 is
 * full; Linux drops a write that a stop lands in the middle of (n_tty checks for room, then its
 * "\r\n" or single byte goes nowhere), so a naive tcflow(TCOOFF) loses bytes to a daemon that
 * reads in bursts. Each test reads through a FIFO in thousands of short bursts and counts bytes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { tmpdir } from "node:os";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { StdoutFifo } from "../support/fifo.ts";
import { killLeftovers, startPty } from "../support/pty.ts";
import { ALL_MODES, cannotContain } from "../support/containment.ts";

setDefaultTimeout(120_000);

const MiB = 1024 * 1024;
/** Lines of "y\n", shown by the terminal as "y\r\n". */
const SIZE = 32 * MiB;

/** Runs `script` in a PTY exec of `ws`, reading its output in 1 ms bursts; resolves with what arrived. */
async function readInBursts(ws: ReadyWorkspace, script: string): Promise<{ bytes: number; bursts: number; exit: unknown }> {
  const fifo = new StdoutFifo(tmpdir());
  const handle = startPty(ws, ["sh", "-c", script], {}, { stdoutFd: fifo.writeFd });
  fifo.handedOver();
  let bursts = 0;
  while (fifo.readAvailable()) {
    bursts++;
    await Bun.sleep(1);
  }
  const result = await handle.done;
  expect(result.violation).toBeNull();
  return { bytes: fifo.bytes, bursts, exit: result.events.at(-1) };
}

const EXIT_0 = { type: "exit", protocolVersion: 1, code: 0, signal: null };

for (const containment of ALL_MODES) {
  describe.skipIf(cannotContain(containment, "exec/pty-flow.test.ts"))(`${containment} containment: a daemon reading PTY output in bursts`, () => {
    let ws: ReadyWorkspace;
    beforeAll(async () => {
      ws = await readyWorkspace(`pty-flow-${containment}`, "seed", { containment });
    });
    afterEach(async () => {
      await killLeftovers();
    });
    afterAll(() => ws?.cleanup());

    test("gets every byte of a workload printing lines (each \\n shown as \\r\\n)", async () => {
      const { bytes, exit } = await readInBursts(ws, `yes | head -c ${SIZE}`);
      expect(exit).toEqual(EXIT_0);
      expect(bytes).toBe(SIZE * 1.5);
    });

    test("gets every byte of a workload in raw mode (stty -opost)", async () => {
      const { bytes, exit } = await readInBursts(ws, `stty -opost && yes | head -c ${SIZE}`);
      expect(exit).toEqual(EXIT_0);
      expect(bytes).toBe(SIZE);
    });
  });
}
