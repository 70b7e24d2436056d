/**
 * Reading the runtime log: every complete line, oldest first, and following it across
 * rotations. Readers never write anything in the log directory (see openLogFiles).
 */
import { closeSync, existsSync, fstatSync, readSync } from "node:fs";
import { logFilePath, openLogFiles, type OpenLogFile } from "./files.ts";

/** Whether any file of the log exists in `directory`. */
export function logExists(directory: string): boolean {
  return existsSync(logFilePath(directory)) || existsSync(logFilePath(directory, 1));
}

/**
 * New complete lines of the log at each `poll()`, in order, across rotations: the file it was
 * reading is recognised by inode among the rotated ones, finished, then each newer file read.
 * A last line still being written (no newline yet) is left for the next poll.
 */
export class LogFollower {
  /** Where the next poll starts: a file (by inode) and a byte offset in it. */
  #position: { ino: number; offset: number } | null = null;
  /** Set when a poll found its file rotated away (lines were dropped before they were read). */
  missed = false;

  constructor(readonly directory: string) {}

  poll(): string[] {
    const files = openLogFiles(this.directory);
    try {
      return this.#read(files);
    } finally {
      for (const file of files) closeSync(file.fd);
    }
  }

  #read(files: OpenLogFile[]): string[] {
    if (files.length === 0) return [];
    let start = 0;
    let offset = 0;
    if (this.#position) {
      const index = files.findIndex((file) => file.ino === this.#position!.ino);
      if (index === -1) this.missed = true;
      else [start, offset] = [index, this.#position.offset];
    }
    const lines: string[] = [];
    for (let index = start; index < files.length; index++) {
      const file = files[index]!;
      const last = index === files.length - 1;
      const from = index === start ? offset : 0;
      const { complete, end } = completeLines(readFrom(file.fd, from), last);
      lines.push(...complete);
      this.#position = { ino: file.ino, offset: from + end };
    }
    return lines;
  }
}

function readFrom(fd: number, offset: number): Buffer {
  const size = fstatSync(fd).size;
  if (size <= offset) return Buffer.alloc(0);
  const buffer = Buffer.allocUnsafe(size - offset);
  let filled = 0;
  while (filled < buffer.length) {
    const n = readSync(fd, buffer, filled, buffer.length - filled, offset + filled);
    if (n === 0) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}

/**
 * The lines in `data` and how many bytes they used. In the newest file an unterminated tail is
 * a write in progress and waits; in a rotated file (final) it is a line cut short, kept as is.
 */
function completeLines(data: Buffer, newest: boolean): { complete: string[]; end: number } {
  const cut = data.lastIndexOf(0x0a);
  const end = newest ? cut + 1 : data.length;
  const text = data.subarray(0, end).toString("utf8");
  const complete = text.split("\n");
  if (complete.at(-1) === "") complete.pop();
  return { complete, end };
}
