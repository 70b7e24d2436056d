/** A lifecycle request on stdin, and the one response line on stdout, as bytes. */
import { readSync } from "node:fs";
// From the protocol's own modules, not its index: every lifecycle operation loads this file,
// and the index would also load (and build) the exec-only fd 3 / fd 4 schemas.
import type { Dialect } from "./dialect.ts";
import { LimitError, ProtocolError, parseMessage } from "./errors.ts";
import { concatBytes, encodeFrame, sizeText } from "./frame.ts";
import { LifecycleRequest, lifecycleResponseOf, type LifecycleResponse } from "./lifecycle.ts";
import { utf8OrNull } from "./utf8.ts";
import { writeStdout } from "../output.ts";
import { hasErrno, WOULD_BLOCK } from "../platform/errno.ts";

/** Upper bound on a lifecycle request; real ones are a few hundred bytes. */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** Reads stdin to EOF (bounded) and returns the one LifecycleRequest it must hold, in either dialect. */
export function readLifecycleRequest(fd = 0): LifecycleRequest {
  return parseMessage(LifecycleRequest, readBounded(fd), "lifecycle request");
}

/** Plain Uint8Arrays, not Buffer: the first use of Buffer in a process costs ~0.25 ms. */
function readBounded(fd: number): string {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buffer = new Uint8Array(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buffer, 0, buffer.length, null);
    } catch (error) {
      if (hasErrno(error, WOULD_BLOCK)) {
        Bun.sleepSync(1);
        continue;
      }
      if (hasErrno(error, ["EOF"])) break;
      throw new ProtocolError(`cannot read the lifecycle request from stdin: ${(error as Error).message}`);
    }
    if (n === 0) break;
    total += n;
    if (total > MAX_REQUEST_BYTES) throw new LimitError(`lifecycle request on stdin larger than ${sizeText(MAX_REQUEST_BYTES)}`);
    chunks.push(buffer.slice(0, n));
  }
  const text = utf8OrNull(concatBytes(chunks, total));
  if (text === null) throw new ProtocolError("lifecycle request on stdin is not valid UTF-8");
  if (text.trim() === "") throw new ProtocolError("expected one lifecycle request JSON value on stdin, got nothing");
  return text;
}

/** Writes one LifecycleResponse line to stdout, validated and canonical in the request's dialect. */
export function respond(response: LifecycleResponse, dialect: Dialect): void {
  writeStdout(encodeFrame(lifecycleResponseOf(response.type, dialect), response, "lifecycle response"));
}
