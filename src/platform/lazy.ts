/**
 * What is loaded or built on first use rather than at start-up. Node built-ins: a compiled Bun binary
 * loads every statically imported built-in at start-up, and each protocol call pays for that
 * (node:child_process ~1 ms, node:tty and node:crypto ~5 ms each, node:os ~0.8 ms, node:fs ~2 ms;
 * see bench/). Modules of one operation import `node:fs` directly: the release build is split
 * per command (the table in src/cli.ts), so only what every call loads (src/main.ts and its static
 * imports) must reach `node:fs` through here.
 */
type ChildProcessModule = typeof import("node:child_process");

let childProcess: ChildProcessModule | undefined;

/** `node:child_process`, loaded the first time it is asked for. */
export function lazyChildProcess(): ChildProcessModule {
  childProcess ??= require("node:child_process") as ChildProcessModule;
  return childProcess;
}

type OsModule = typeof import("node:os");

let os: OsModule | undefined;

/** `node:os`, loaded the first time it is asked for. */
export function lazyOs(): OsModule {
  os ??= require("node:os") as OsModule;
  return os;
}

type FsModule = typeof import("node:fs");

let fs: FsModule | undefined;

/** `node:fs`, loaded the first time it is asked for (`describe` never asks). */
export function lazyFs(): FsModule {
  fs ??= require("node:fs") as FsModule;
  return fs;
}

/**
 * A value (a valibot schema, a resolved setting) computed the first time it is asked for, then
 * kept. The compiled binary runs every module's top level at start-up, and building valibot
 * schemas there made each call pay for the schemas of every other operation (bench/README.md).
 */
export function once<T>(build: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= build());
}
