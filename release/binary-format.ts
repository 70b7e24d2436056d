// What an executable is, read from its headers: ELF or Mach-O, CPU, and (ELF) which libc loader.
// Lets the release check every archive, including the ones this machine cannot run.
import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import type { Target } from "./targets.ts";

export interface BinaryFormat {
  format: "ELF" | "Mach-O";
  arch: "x64" | "arm64";
  /** ELF: the PT_INTERP path (`/lib/ld-musl-x86_64.so.1`); Mach-O: undefined. */
  interpreter?: string;
  libc: "glibc" | "musl" | "darwin";
  /** Mach-O only: where the LC_CODE_SIGNATURE blob lies, when there is one. */
  codeSignature?: { offset: number; size: number };
}

const ELF_MACHINES: Record<number, BinaryFormat["arch"]> = { 62: "x64", 183: "arm64" };
const MACHO_CPUS: Record<number, BinaryFormat["arch"]> = { 0x01000007: "x64", 0x0100000c: "arm64" };
const PT_INTERP = 3;
const MH_MAGIC_64 = 0xfeedfacf;
const MH_EXECUTE = 2;
const LC_CODE_SIGNATURE = 0x1d;

function elf(b: Buffer): BinaryFormat {
  if (b[4] !== 2 || b[5] !== 1) throw new Error("ELF: not 64-bit little-endian");
  const arch = ELF_MACHINES[b.readUInt16LE(18)];
  if (!arch) throw new Error(`ELF: unexpected machine ${b.readUInt16LE(18)}`);
  const phoff = Number(b.readBigUInt64LE(32));
  const phentsize = b.readUInt16LE(54);
  const phnum = b.readUInt16LE(56);
  let interpreter: string | undefined;
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize;
    if (ph + 40 > b.length) throw new Error("ELF: program headers beyond the bytes read");
    if (b.readUInt32LE(ph) !== PT_INTERP) continue;
    const offset = Number(b.readBigUInt64LE(ph + 8));
    const size = Number(b.readBigUInt64LE(ph + 32));
    if (offset + size > b.length) throw new Error("ELF: interpreter beyond the bytes read");
    interpreter = b.toString("latin1", offset, offset + size).replace(/\0+$/, "");
  }
  if (!interpreter) throw new Error("ELF: no PT_INTERP (a static binary is not what Bun builds)");
  return { format: "ELF", arch, interpreter, libc: /ld-musl-/.test(interpreter) ? "musl" : "glibc" };
}

function machO(b: Buffer): BinaryFormat {
  const arch = MACHO_CPUS[b.readInt32LE(4)];
  if (!arch) throw new Error(`Mach-O: unexpected CPU type 0x${b.readUInt32LE(4).toString(16)}`);
  if (b.readUInt32LE(12) !== MH_EXECUTE) throw new Error("Mach-O: not an executable");
  const ncmds = b.readUInt32LE(16);
  let codeSignature: BinaryFormat["codeSignature"];
  let at = 32;
  for (let i = 0; i < ncmds; i++) {
    if (at + 16 > b.length) throw new Error("Mach-O: load commands beyond the bytes read");
    if (b.readUInt32LE(at) === LC_CODE_SIGNATURE) codeSignature = { offset: b.readUInt32LE(at + 8), size: b.readUInt32LE(at + 12) };
    const size = b.readUInt32LE(at + 4);
    if (size < 8) throw new Error("Mach-O: malformed load command");
    at += size;
  }
  return { format: "Mach-O", arch, libc: "darwin", codeSignature };
}

/** Reads the headers of `file` (its first 1 MiB is plenty for both formats). */
export function readBinaryFormat(file: string): BinaryFormat {
  const fd = openSync(file, "r");
  const b = Buffer.alloc(1 << 20);
  let n: number;
  try {
    n = readSync(fd, b, 0, b.length, 0);
  } finally {
    closeSync(fd);
  }
  const head = b.subarray(0, n);
  if (n >= 64 && head.readUInt32BE(0) === 0x7f454c46) return elf(head);
  if (n >= 32 && head.readUInt32LE(0) === MH_MAGIC_64) return machO(head);
  throw new Error(`${file}: neither a 64-bit ELF nor a 64-bit Mach-O executable`);
}

/** One line: `ELF arm64 (glibc, /lib/ld-linux-aarch64.so.1)`, `Mach-O x64 (signed)`. */
export function describeFormat(f: BinaryFormat): string {
  if (f.format === "ELF") return `ELF ${f.arch} (${f.libc}, ${f.interpreter})`;
  return `Mach-O ${f.arch} (${f.codeSignature ? "signed" : "unsigned"})`;
}

/** Why `f` is not a binary for `t`, or undefined when it is. (x64 and x64-baseline share a format.) */
export function formatMismatch(f: BinaryFormat, t: Target): string | undefined {
  const want = t.os === "darwin" ? "Mach-O" : "ELF";
  if (f.format !== want) return `expected ${want}, found ${f.format}`;
  if (f.arch !== t.arch) return `expected ${t.arch}, found ${f.arch}`;
  if (f.libc !== t.libc) return `expected ${t.libc}, found ${f.libc} (${f.interpreter})`;
  return undefined;
}

const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const HASHES: Record<number, string> = { 1: "sha1", 2: "sha256" };

/**
 * Checks a Mach-O signature's code-page hashes the way `codesign --verify` starts: every page of
 * the file up to the CodeDirectory's code limit must hash to its slot. Returns the problem, or
 * undefined when every CodeDirectory matches. (It does not check the special slots —
 * Info.plist, requirements, entitlements — nor any certificate: ad-hoc signatures have none.)
 * Runs anywhere, so a Linux release host can tell a broken signature from a good one.
 */
export function codePageHashProblem(file: string): string | undefined {
  const f = readBinaryFormat(file);
  if (f.format !== "Mach-O") return "not a Mach-O file";
  if (!f.codeSignature) return "no LC_CODE_SIGNATURE";
  const b = readFileSync(file);
  const sig = b.subarray(f.codeSignature.offset, f.codeSignature.offset + f.codeSignature.size);
  if (sig.length < 12 || sig.readUInt32BE(0) !== CSMAGIC_EMBEDDED_SIGNATURE) return "signature is not an embedded SuperBlob";
  let directories = 0;
  for (let i = 0; i < sig.readUInt32BE(8); i++) {
    const start = sig.readUInt32BE(12 + i * 8 + 4);
    if (sig.readUInt32BE(start) !== CSMAGIC_CODEDIRECTORY) continue;
    directories++;
    const hashOffset = sig.readUInt32BE(start + 16);
    const nCodeSlots = sig.readUInt32BE(start + 28);
    const codeLimit = sig.readUInt32BE(start + 32);
    const hashSize = sig[start + 36]!;
    const algorithm = HASHES[sig[start + 37]!];
    const pageSize = 2 ** sig[start + 39]!;
    if (!algorithm) return `unknown hash type ${sig[start + 37]}`;
    if (codeLimit > b.length) return `code limit ${codeLimit} beyond the file (${b.length} bytes)`;
    if (nCodeSlots !== Math.ceil(codeLimit / pageSize)) return `${nCodeSlots} code slots for a code limit of ${codeLimit}`;
    for (let page = 0; page < nCodeSlots; page++) {
      const data = b.subarray(page * pageSize, Math.min((page + 1) * pageSize, codeLimit));
      const want = sig.subarray(start + hashOffset + page * hashSize, start + hashOffset + (page + 1) * hashSize);
      const got = createHash(algorithm).update(data).digest().subarray(0, hashSize);
      if (!got.equals(want)) return `page ${page} of ${nCodeSlots} does not match its ${algorithm} hash`;
    }
  }
  return directories ? undefined : "no CodeDirectory in the signature";
}
