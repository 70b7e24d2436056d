/**
 * The one way this code binds a libc call: through bun:ffi (which works inside compiled
 * binaries), each symbol on its own first call. Binding costs start-up (the first dlopen
 * ~0.15 ms, each later one 20–40 µs in a running exec), so a process binds only what it calls,
 * and `describe` and `inspect` bind nothing.
 */
import type { ConvertFns, FFIFunction, Pointer } from "bun:ffi";
import { lazyOs } from "../lazy.ts";
import { isLinux, isMacOS } from "../os.ts";

type Ffi = typeof import("bun:ffi");
let ffiModule: Ffi | undefined;

/** bun:ffi, loaded by the first call that needs libc (~0.2 ms at start-up; inspect makes none). */
export function ffi(): Ffi {
  ffiModule ??= require("bun:ffi") as Ffi;
  return ffiModule;
}

// musl builds too: musl's loader answers any "libc.*" name with itself (ldso/dynlink.c, load_library).
const LIBC = isMacOS ? "libc.dylib" : "libc.so.6";

/** glibc and musl name the errno accessor `__errno_location`, Darwin `__error`. */
const ERRNO_SYMBOL = isMacOS ? "__error" : "__errno_location";

/** The JavaScript function bun:ffi makes of a declaration. */
type Call<D extends FFIFunction> = ConvertFns<{ call: D }>["call"];
type Untyped = (...args: unknown[]) => unknown;

let errnoLocation: (() => Pointer | null) | undefined;

function bind(name: string, declaration: FFIFunction): Untyped {
  // errno is read right after a failed call: its accessor comes with the first function bound.
  const declarations = errnoLocation ? { [name]: declaration } : { [name]: declaration, [ERRNO_SYMBOL]: { args: [], returns: "ptr" } as const };
  const symbols = ffi().dlopen(LIBC, declarations).symbols as unknown as Record<string, Untyped>;
  errnoLocation ??= symbols[ERRNO_SYMBOL] as () => Pointer | null;
  return symbols[name]!;
}

/** libc's `name`, declared as bun:ffi declares it, bound the first time it is called. */
export function libcFunction<const D extends FFIFunction>(name: string, declaration: D): (...args: Parameters<Call<D>>) => ReturnType<Call<D>> {
  let bound: Untyped | undefined;
  return ((...args: unknown[]) => (bound ??= bind(name, declaration))(...args)) as (...args: Parameters<Call<D>>) => ReturnType<Call<D>>;
}

/** errno of the calling thread, read right after a failed call (nothing runs in between). */
export function errno(): number {
  const location = errnoLocation?.() ?? null;
  return location === null ? 0 : ffi().read.i32(location, 0);
}

/** A failed libc call, with the errno name Node uses (`code`), so callers test `error.code`. */
export class SystemCallError extends Error {
  constructor(
    call: string,
    readonly code: string,
  ) {
    super(`${call} failed: ${code}`);
  }
}

/** The error of a call that just failed (`errno` read first, before anything else runs), named (ELOOP, ENOENT…) for this platform. */
export function failed(errno: number, call: string): SystemCallError {
  for (const [name, value] of Object.entries(lazyOs().constants.errno)) if (value === errno) return new SystemCallError(call, name);
  return new SystemCallError(call, `errno ${errno}`);
}

/** `text` as a NUL-terminated C string. */
export function cString(text: string | Buffer): Buffer {
  return typeof text === "string" ? Buffer.from(`${text}\0`) : Buffer.concat([text, Buffer.of(0)]);
}

const rawSyscall = libcFunction("syscall", { args: ["i64", "i64", "i64", "i64", "i64"], returns: "i64" });

/** A syscall argument: a number, or memory passed by its address. */
type Word = number | NodeJS.TypedArray;

function word(value: Word): number {
  return typeof value === "number" ? value : Number(ffi().ptr(value));
}

/**
 * syscall(2), Linux only: the calls glibc does not wrap (pidfds, openat2, futex), every
 * argument a machine word. Memory is given as the typed array itself, so it stays referenced by
 * this call while the kernel reads it. Returns the kernel's result: -1 with errno set on failure.
 */
export function syscall(number: number, a: Word = 0, b: Word = 0, c: Word = 0, d: Word = 0): number {
  if (!isLinux) throw new Error("this call exists only on Linux");
  return Number(rawSyscall(number, word(a), word(b), word(c), word(d)));
}
