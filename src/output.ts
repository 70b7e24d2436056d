import { writeSync } from "node:fs";
import { redactCredentials } from "./redact.ts";

/**
 * Writes all of `text` to a descriptor with blocking writes. Never uses process.stdout:
 * that would make a descriptor shared with a workload non-blocking (see platform notes).
 */
export function writeAll(fd: number, text: string | Uint8Array): void {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
      Bun.sleepSync(1);
    }
  }
}

/** Protocol output: the only thing that ever goes to stdout for lifecycle operations. */
export function writeStdout(text: string): void {
  writeAll(1, text);
}

/** One diagnostic line on stderr, prefixed with the program name; URL credentials are redacted. */
export function diagnose(message: string): void {
  writeAll(2, `paseo-host-runtime: ${redactCredentials(message)}\n`);
}
