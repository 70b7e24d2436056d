/** Running the compiled binary from tests, the way the daemon does for lifecycle operations. */
import { existsSync } from "node:fs";
import { join } from "node:path";

/** The compiled binary under test (`npm test` builds it first). */
export const BIN = join(import.meta.dir, "..", "dist", "paseo-host-runtime");

// `npm run test:unit` runs without a build: a test of that tier that reached here belongs to the end-to-end tier.
if (process.env.PASEO_TEST_TIER === "unit") throw new Error("a test of `npm run test:unit` imports kit/binary.ts: it needs the compiled binary, so it belongs to the end-to-end tier (CONTRIBUTING.md, Tests and their tiers)");
if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` (npm test does it for you)`);

export interface RunResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  stdin?: string | Uint8Array;
  env?: Record<string, string | undefined>;
  cwd?: string;
}

/** Runs the binary with `args`, feeding `stdin` and closing it; resolves on exit. */
export async function runBinary(args: string[], options: RunOptions = {}): Promise<RunResult> {
  const proc = Bun.spawn([BIN, ...args], {
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ...options.env } as Record<string, string>,
    cwd: options.cwd,
  });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  return { code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode), stdout, stderr };
}

/** A lifecycle request line as the daemon sends it. */
export function request(options: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ protocolVersion: 1, ...extra, options })}\n`;
}

/** A lifecycle request line as the later daemon sends it: runtimeInstanceId second. */
export function laterRequest(instanceId: string, options: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ protocolVersion: 1, runtimeInstanceId: instanceId, ...extra, options })}\n`;
}

/** What a run on a terminal printed (stdout and stderr are the same terminal) and how it ended. */
export interface TerminalResult {
  code: number | null;
  signal: string | null;
  output: string;
  /** True when it had to be killed after `timeoutMs` (it was waiting on the terminal). */
  timedOut: boolean;
}

/**
 * Runs the binary with a fresh PTY as its stdin, stdout and stderr, the way a person at a
 * terminal would, typing nothing. Killed (and `timedOut`) after `timeoutMs`.
 */
export async function runOnTerminal(args: string[], options: { env?: Record<string, string | undefined>; timeoutMs?: number } = {}): Promise<TerminalResult> {
  let output = "";
  const decoder = new TextDecoder();
  const proc = Bun.spawn([BIN, ...args], {
    env: { ...process.env, ...options.env } as Record<string, string>,
    terminal: {
      cols: 200,
      rows: 50,
      data(_terminal, chunk) {
        output += decoder.decode(chunk, { stream: true });
      },
    },
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, options.timeoutMs ?? 10_000);
  await proc.exited;
  clearTimeout(timer);
  proc.terminal?.close();
  return { code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode), output: output.replaceAll("\r\n", "\n"), timedOut };
}
