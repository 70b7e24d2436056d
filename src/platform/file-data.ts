/**
 * Copying one file's data so that a sparse file stays sparse: a reflink where the filesystem
 * has one, else only the data extents (SEEK_DATA / SEEK_HOLE), each with copy_file_range on
 * Linux or pread/pwrite, and the size set last so trailing holes stay holes.
 */
import { ftruncateSync, fstatSync, readSync, writeSync } from "node:fs";
import { cloneFile, copyFileRange, lseek, SEEK_DATA, SEEK_HOLE } from "./libc/files.ts";
import { SystemCallError } from "./libc/symbols.ts";
import { hasErrno } from "./errno.ts";
import { isLinux } from "./os.ts";

/** Errors after which copy_file_range is not tried again for this file (other filesystems, old kernels). */
const NO_COPY_RANGE = ["EXDEV", "ENOSYS", "EOPNOTSUPP", "ENOTSUP", "EINVAL", "EBADF"] as const;
/** Largest single transfer (the kernel caps one at just under 2 GiB anyway). */
const CHUNK = 1 << 30;
const BUFFER_SIZE = 1 << 20;

/** How `from` reached `to`, for tests and diagnostics. */
type CopyMethod = "reflink" | "extents";

/**
 * Copies all data of the regular file open at `from` into the empty file open for writing at
 * `to`. `inKernel: false` uses only lseek and pread/pwrite (what macOS does; tests use it too).
 */
export function copyFileData(from: number, to: number, { inKernel = isLinux } = {}): CopyMethod {
  const size = fstatSync(from).size;
  if (size === 0) return "extents";
  if (inKernel && tryReflink(from, to)) return "reflink";
  const state = { copyRange: inKernel };
  for (const [start, end] of dataExtents(from, size)) copyExtent(from, to, start, end, state);
  ftruncateSync(to, size);
  return "extents";
}

function tryReflink(from: number, to: number): boolean {
  try {
    cloneFile(from, to);
    return true;
  } catch (error) {
    // Any errno, not a named set: a reflink only saves work; the copy below does it anyway.
    if (error instanceof SystemCallError) return false;
    throw error;
  }
}

/** [start, end) of each run of data; the whole file where the filesystem cannot tell holes. */
function* dataExtents(fd: number, size: number): Generator<[number, number]> {
  let offset = 0;
  while (offset < size) {
    let start: number;
    try {
      start = lseek(fd, offset, SEEK_DATA);
    } catch (error) {
      if (!(error instanceof SystemCallError)) throw error;
      if (hasErrno(error, ["ENXIO"])) return; // Only a hole is left.
      yield [offset, size]; // Any other errno (EINVAL: no SEEK_DATA here): everything counts as data.
      return;
    }
    const end = Math.min(lseek(fd, start, SEEK_HOLE), size);
    if (end > start) yield [start, end];
    offset = end;
  }
}

function copyExtent(from: number, to: number, start: number, end: number, state: { copyRange: boolean }): void {
  let offset = start;
  while (offset < end && state.copyRange) {
    try {
      const copied = copyFileRange(from, to, offset, Math.min(end - offset, CHUNK));
      if (copied === 0) return; // The file shrank while we copied.
      offset += copied;
    } catch (error) {
      if (!hasErrno(error, NO_COPY_RANGE)) throw error;
      state.copyRange = false;
    }
  }
  copyByReading(from, to, offset, end);
}

function copyByReading(from: number, to: number, start: number, end: number): void {
  const buffer = Buffer.allocUnsafe(Math.min(BUFFER_SIZE, Math.max(end - start, 1)));
  let offset = start;
  while (offset < end) {
    const length = readSync(from, buffer, 0, Math.min(buffer.length, end - offset), offset);
    if (length === 0) return;
    let written = 0;
    while (written < length) written += writeSync(to, buffer, written, length - written, offset + written);
    offset += length;
  }
}
