/**
 * The signal-latency workload, built once per run: bench/workloads/sigstamp.c compiled with
 * `cc` when present, else bench/workloads/sigstamp.ts run by this Bun (slower to react; the
 * report says which one measured the figures).
 */
import { join } from "node:path";
import { tempDir } from "./procs.ts";

export interface Sigstamp {
  argv: string[];
  kind: "c" | "bun";
  note: string;
}

export function buildSigstamp(): Sigstamp {
  const source = join(import.meta.dir, "workloads", "sigstamp.c");
  const cc = Bun.which("cc") ?? Bun.which("gcc") ?? Bun.which("clang");
  if (cc) {
    const out = join(tempDir("phr-bench-cc-"), "sigstamp");
    const result = Bun.spawnSync([cc, "-O2", "-o", out, source], { stderr: "pipe" });
    if (result.exitCode === 0) return { argv: [out], kind: "c", note: `workload: sigstamp.c built with ${cc}` };
    console.error(`bench: ${cc} failed on sigstamp.c, falling back to the Bun workload:\n${result.stderr.toString()}`);
  }
  return {
    argv: [process.execPath, join(import.meta.dir, "workloads", "sigstamp.ts")],
    kind: "bun",
    note: "workload: sigstamp.ts under Bun (no C compiler found): its own handler latency is included on both sides",
  };
}

/** A parsed "S <signo> <ns>" line. */
export interface Stamp {
  signo: number;
  ns: bigint;
}

/**
 * Reads sigstamp's stdout (pipe or PTY, so "\r\n" too): `ready` resolves with its pid, `next()`
 * with the next stamp.
 */
export class StampReader {
  readonly ready: Promise<number>;
  #resolveReady: (pid: number) => void = () => {};
  #text = "";
  #stamps: Stamp[] = [];
  #waiters: ((stamp: Stamp) => void)[] = [];

  constructor() {
    this.ready = new Promise((resolve) => (this.#resolveReady = resolve));
  }

  feed = (chunk: Buffer): void => {
    this.#text += chunk.toString("latin1");
    for (let nl = this.#text.indexOf("\n"); nl !== -1; nl = this.#text.indexOf("\n")) {
      const line = this.#text.slice(0, nl).replace(/\r$/, "");
      this.#text = this.#text.slice(nl + 1);
      const [tag, a, b] = line.split(" ");
      if (tag === "ready") this.#resolveReady(Number(a));
      else if (tag === "S" && a && b) this.#deliver({ signo: Number(a), ns: BigInt(b) });
    }
  };

  /** The next stamp not yet taken (drops nothing: stamps queue until asked for). */
  next(): Promise<Stamp> {
    const queued = this.#stamps.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** After a timed-out trial: forgets queued stamps and abandons waiting `next()` calls, so a late stamp cannot be taken for the next trial's. */
  drain(): void {
    this.#stamps = [];
    this.#waiters = [];
  }

  #deliver(stamp: Stamp): void {
    const waiter = this.#waiters.shift();
    if (waiter) waiter(stamp);
    else this.#stamps.push(stamp);
  }
}
