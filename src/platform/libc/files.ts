/**
 * Files by descriptor: paths opened relative to a directory descriptor, for confinement
 * (directory.ts), and file data copied extent by extent (file-data.ts).
 */
import { cString, errno, failed, ffi, libcFunction, syscall } from "./symbols.ts";
import { isMacOS } from "../os.ts";

/** `openat` is variadic; it is declared without the mode, which only O_CREAT reads. */
const openatCall = libcFunction("openat", { args: ["i32", "ptr", "i32"], returns: "i32" });
const fchdirCall = libcFunction("fchdir", { args: ["i32"], returns: "i32" });
const lseekCall = libcFunction("lseek", { args: ["i32", "i64", "i32"], returns: "i64" });
/** Linux only: in-kernel copies (glibc 2.27+). */
const copyFileRangeCall = libcFunction("copy_file_range", { args: ["i32", "ptr", "i32", "ptr", "u64", "u32"], returns: "i64" });
/** `ioctl` is variadic; its one argument is an int here. */
const ioctl = libcFunction("ioctl", { args: ["i32", "u64", "i32"], returns: "i32" });

/** openat(2): `name` opened relative to the directory `dirFd`; returns the new descriptor. */
export function openat(dirFd: number, name: string | Buffer, flags: number): number {
  const fd = openatCall(dirFd, cString(name), flags);
  if (fd < 0) throw failed(errno(), `openat(${JSON.stringify(String(name))})`);
  return fd;
}

/** struct open_how's `resolve` bits (linux/openat2.h). */
const RESOLVE_NO_XDEV = 0x01n;
const RESOLVE_NO_SYMLINKS = 0x04n;
const RESOLVE_BENEATH = 0x08n;
/** openat2 has the same number on every Linux architecture (it is newer than the unified table). */
const SYS_OPENAT2 = 437;

/**
 * openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: the kernel refuses any `..` that
 * leaves `dirFd` and any symlink on the way (ELOOP), in one atomic walk. With `sameMount`, also
 * RESOLVE_NO_XDEV: crossing into any mount, a bind mount of the same filesystem included, fails
 * with EXDEV. Linux 5.6+.
 */
export function openat2Beneath(dirFd: number, path: string | Buffer, flags: number, sameMount = false): number {
  const resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | (sameMount ? RESOLVE_NO_XDEV : 0n);
  const how = new BigUint64Array([BigInt(flags), 0n, resolve]);
  const fd = syscall(SYS_OPENAT2, dirFd, cString(path), how, how.byteLength);
  if (fd < 0) throw failed(errno(), `openat2(${JSON.stringify(String(path))}, RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS${sameMount ? "|RESOLVE_NO_XDEV" : ""})`);
  return fd;
}

/** fchdir(2): makes the directory open at `fd` this process's working directory. */
export function fchdir(fd: number): void {
  if (fchdirCall(fd) < 0) throw failed(errno(), `fchdir(${fd})`);
}

/** lseek(2) whence values for sparse files: Linux and the BSDs swapped them. */
export const SEEK_DATA = isMacOS ? 4 : 3;
export const SEEK_HOLE = isMacOS ? 3 : 4;

/** lseek(2); returns the resulting offset. */
export function lseek(fd: number, offset: number, whence: number): number {
  const result = Number(lseekCall(fd, offset, whence));
  if (result < 0) throw failed(errno(), `lseek(${fd}, ${offset}, ${whence})`);
  return result;
}

/**
 * copy_file_range(2) of `length` bytes at `offset` in both files (the descriptors' own
 * offsets are not used). Returns the bytes copied: fewer than asked is normal, 0 is EOF.
 */
export function copyFileRange(from: number, to: number, offset: number, length: number): number {
  const offsets = new BigInt64Array([BigInt(offset), BigInt(offset)]);
  const copied = Number(copyFileRangeCall(from, ffi().ptr(offsets, 0), to, ffi().ptr(offsets, 8), length, 0));
  if (copied < 0) throw failed(errno(), "copy_file_range");
  return copied;
}

/** FICLONE (linux/fs.h: _IOW(0x94, 9, int)): makes `to` share all of `from`'s blocks. */
const FICLONE = 0x40049409;

/** Reflinks `from` into `to` where the filesystem can (btrfs, XFS…); throws otherwise. */
export function cloneFile(from: number, to: number): void {
  if (ioctl(to, FICLONE, from) < 0) throw failed(errno(), "ioctl(FICLONE)");
}
