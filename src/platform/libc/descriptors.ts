/** Descriptors made or moved by number: dup2, close-on-exec pipes and duplicates, in-memory files. */
import { writeSync } from "node:fs";
import { isLinux, isMacOS } from "../os.ts";
import { cString, errno, failed, ffi, libcFunction } from "./symbols.ts";

const dup2Call = libcFunction("dup2", { args: ["i32", "i32"], returns: "i32" });
const pipe = libcFunction("pipe", { args: ["ptr"], returns: "i32" });
/** Linux only (glibc and musl both export it). */
const pipe2 = libcFunction("pipe2", { args: ["ptr", "i32"], returns: "i32" });
/** `fcntl` is variadic; its one argument is an int here. */
const fcntl = libcFunction("fcntl", { args: ["i32", "i32", "i32"], returns: "i32" });
/** Linux only (glibc 2.27, musl 1.1.20). */
const memfdCreate = libcFunction("memfd_create", { args: ["ptr", "u32"], returns: "i32" });

/** dup2(2); throws with the call named on failure. */
export function dup2(from: number, to: number): void {
  if (dup2Call(from, to) < 0) throw new Error(`dup2(${from}, ${to}) failed`);
}

const O_CLOEXEC = 0o2000000;

/**
 * A pipe as [read end, write end]. On Linux both ends are close-on-exec (pipe2); macOS has no
 * pipe2, and there Bun's spawn closes every descriptor it was not told to pass (unverified).
 */
export function makePipe(): [number, number] {
  const fds = new Int32Array(2);
  const result = isLinux ? pipe2(ffi().ptr(fds), O_CLOEXEC) : pipe(ffi().ptr(fds));
  if (result < 0) throw new Error(`pipe failed (errno ${errno()})`);
  return [fds[0]!, fds[1]!];
}

const MFD_CLOEXEC = 1;

/**
 * A close-on-exec in-memory file holding `data`, its offset at 0 (Linux): the file bwrap copies
 * the sandbox init from (src/exec/prepare.ts).
 */
export function memoryFile(name: string, data: string): number {
  const fd = memfdCreate(cString(name), MFD_CLOEXEC);
  if (fd < 0) throw failed(errno(), "memfd_create");
  const bytes = Buffer.from(data);
  // Positional writes leave the offset at 0, where bwrap starts reading.
  for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset, bytes.length - offset, offset);
  return fd;
}

const F_DUPFD_CLOEXEC = isMacOS ? 67 : 1030;

/**
 * A close-on-exec duplicate of `fd` numbered 10 or above: a spawn that also replaces fds 0–2
 * can then hand the original 0–2 on at other numbers without dup2 clobbering them first.
 */
export function duplicateDescriptor(fd: number): number {
  const copy = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (copy < 0) throw failed(errno(), `fcntl(${fd}, F_DUPFD_CLOEXEC)`);
  return copy;
}
