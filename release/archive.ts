// Reproducible .tar.gz archives and the SHA256SUMS file that covers them.
//
// Same inputs, same bytes: entries in the order given, owner 0:0 with no user or group names,
// one fixed mtime, ustar headers written here (no dependence on the system's tar), and a gzip
// header with mtime 0 and OS byte 3 (Unix). The deflate stream comes from the zlib inside Bun,
// so the archive bytes are stable for one Bun build; the files inside are stable everywhere.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { gzipSync } from "node:zlib";

/** One archive member: a directory (`data` absent) or a regular file. */
export interface Entry {
  path: string;
  mode: number;
  data?: Uint8Array;
}

const BLOCK = 512;
/** GNU and BSD tar write records of 20 blocks; padding to it keeps every reader quiet. */
const RECORD = 20 * BLOCK;

function octal(value: number, width: number): string {
  const digits = value.toString(8);
  if (digits.length > width - 1) throw new Error(`tar: ${value} does not fit in ${width - 1} octal digits`);
  return digits.padStart(width - 1, "0") + "\0";
}

function header(entry: Entry, mtime: number): Uint8Array {
  const isDir = entry.data === undefined;
  const name = isDir && !entry.path.endsWith("/") ? `${entry.path}/` : entry.path;
  if (Buffer.byteLength(name) > 100) throw new Error(`tar: path longer than 100 bytes: ${name}`);
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, "utf8");
  block.write(octal(entry.mode, 8), 100, "ascii");
  block.write(octal(0, 8), 108, "ascii"); // uid
  block.write(octal(0, 8), 116, "ascii"); // gid
  block.write(octal(entry.data?.length ?? 0, 12), 124, "ascii");
  block.write(octal(mtime, 12), 136, "ascii");
  block.write("        ", 148, "ascii"); // checksum field counts as spaces while summing
  block.write(isDir ? "5" : "0", 156, "ascii");
  block.write("ustar\0", 257, "ascii");
  block.write("00", 263, "ascii");
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(octal(sum, 7) + " ", 148, "ascii");
  return block;
}

/** The uncompressed ustar bytes of `entries`, in the order given. */
export function tar(entries: readonly Entry[], mtime: number): Uint8Array {
  const parts: Uint8Array[] = [];
  let size = 0;
  const push = (part: Uint8Array) => {
    parts.push(part);
    size += part.length;
  };
  for (const entry of entries) {
    push(header(entry, mtime));
    if (entry.data) {
      push(entry.data);
      const pad = (BLOCK - (entry.data.length % BLOCK)) % BLOCK;
      if (pad) push(new Uint8Array(pad));
    }
  }
  push(new Uint8Array(2 * BLOCK));
  const tail = (RECORD - (size % RECORD)) % RECORD;
  if (tail) push(new Uint8Array(tail));
  return Buffer.concat(parts);
}

/** gzip at level 9 with a fixed header: mtime 0 (zlib's default) and OS = Unix on every host. */
export function gzip(data: Uint8Array): Uint8Array {
  const out = gzipSync(data, { level: 9 });
  out[9] = 3;
  return out;
}

/** Writes `entries` as a reproducible .tar.gz at `file`. */
export function writeArchive(file: string, entries: readonly Entry[], mtime: number): void {
  writeFileSync(file, gzip(tar(entries, mtime)));
}

export function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

export function sha256File(file: string): string {
  return sha256(readFileSync(file));
}

/** `sha256sum` text format, sorted by name: what `sha256sum -c` and install.sh read. */
export function formatSums(files: readonly string[]): string {
  return [...files]
    .sort((a, b) => (basename(a) < basename(b) ? -1 : basename(a) > basename(b) ? 1 : 0))
    .map((file) => `${sha256File(file)}  ${basename(file)}\n`)
    .join("");
}

/** Writes `dir/SHA256SUMS` covering every `.tar.gz` in `dir` plus `extra` names found there. */
export function writeSums(dir: string, extra: readonly string[] = []): string {
  const names = readdirSync(dir).filter((name) => name.endsWith(".tar.gz") || extra.includes(name));
  if (!names.some((name) => name.endsWith(".tar.gz"))) throw new Error(`no .tar.gz archives in ${dir}`);
  const text = formatSums(names.map((name) => join(dir, name)));
  writeFileSync(join(dir, "SHA256SUMS"), text);
  return text;
}
