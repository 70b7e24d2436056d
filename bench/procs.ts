/**
 * Processes and temp dirs the bench makes, and the guarantee that every one of them is gone
 * when the bench ends (normally, by an error, or by Ctrl-C). Only what the bench itself started
 * is ever killed, by pid, and a workload only after its start time proves it is still ours.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readProcess } from "../src/platform/process.ts";
import { monotonicNs, msBetween } from "./clock.ts";

export const ROOT = join(import.meta.dir, "..");

/** The binary measured: dist/paseo-host-runtime (`npm run build`), or $PASEO_BENCH_BIN. */
export const BIN = process.env.PASEO_BENCH_BIN ?? join(ROOT, "dist", "paseo-host-runtime");

const children = new Set<ChildProcess>();
const workloads = new Map<number, number>();
const cleanups: (() => void)[] = [];

/** Remembers a child so cleanup can SIGKILL it if it is still running. */
export function track<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Remembers a workload (a grandchild in its own session) by pid and start time. */
export function trackWorkload(pid: number): void {
  const info = readProcess(pid);
  if (info) workloads.set(pid, info.startTicks);
}

/** A temp dir removed at cleanup. */
export function tempDir(prefix: string): string {
  const path = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(path, { recursive: true, force: true }));
  return path;
}

/** Runs `fn` at cleanup (e.g. a fixture's own cleanup). */
export function onCleanup(fn: () => void): void {
  cleanups.push(fn);
}

/** Kills what is left of everything tracked, then removes temp dirs. Idempotent. */
export function cleanupAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  children.clear();
  for (const [pid, startTicks] of workloads) {
    const info = readProcess(pid);
    if (info && info.state !== "Z" && info.startTicks === startTicks) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Exited between the check and the kill: nothing left to do.
      }
    }
  }
  workloads.clear();
  for (const fn of cleanups.splice(0).reverse()) {
    try {
      fn();
    } catch (error) {
      console.error(`bench cleanup: ${(error as Error).message}`);
    }
  }
}

export interface RunResult {
  /** Wall time from just before spawn() to 'close' (exit and every pipe at EOF). */
  ms: number;
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `argv` the way the daemon runs a lifecycle op (node:child_process, three pipes, stdin
 * written then closed) and times it. The same function times the /bin/true baseline.
 */
export function runProcess(argv: string[], options: { stdin?: string; env?: Record<string, string | undefined> } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const begin = monotonicNs();
    const child = track(spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], env: options.env ?? process.env }));
    child.on("error", reject);
    child.stdin!.on("error", () => {});
    child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr!.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("close", (code, signal) =>
      resolve({
        ms: msBetween(begin, monotonicNs()),
        code,
        signal,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
      }),
    );
    child.stdin!.end(options.stdin ?? "");
  });
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rejects with `what` when `promise` takes longer than `ms`: the bench never hangs. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: Timer | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
