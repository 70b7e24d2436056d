import type { Invocation } from "../argv.ts";
import { writeStdout } from "../output.ts";
import { readOptions } from "../options.ts";
import { ProtocolError } from "../protocol/index.ts";
import { withStore } from "../store/db.ts";
import { homeEntry } from "../store/home.ts";
import { checkKey, saveRest, updateMirror, updateSeed } from "./mirror.ts";
import { ReceiveHeader, parseWire, type Received } from "./wire.ts";
import { join } from "node:path";
import { mkdirSync, rmSync } from "node:fs";

/** The header line is small: options plus at most a 1 MiB paseo.json in base64. */
const MAX_HEADER_BYTES = 4 * 1024 * 1024;

/**
 * `receive-source` (internal, run over ssh by a `--remote` runtime's create): stdin is one JSON
 * header line, then a git bundle when `--mirror` is given. Updates the mirror and/or the seed
 * directory in this host's runtime home and prints where they are (one JSON line).
 */
export async function receiveSource(invocation: Invocation): Promise<number> {
  const mirrorKey = invocation.flags.get("mirror");
  const seedKey = invocation.flags.get("seed");
  if (mirrorKey !== undefined) checkKey(mirrorKey, "--mirror");
  if (seedKey !== undefined) checkKey(seedKey, "--seed");
  const reader = Bun.file(0).stream().getReader();
  const { header, rest } = await readHeader(reader);
  const options = readOptions(header.options);
  const received: Received = { mirror: null, seed: null };
  await withStore(options, async ({ db, home }) => {
    if (mirrorKey !== undefined) {
      if (!header.repository) throw new ProtocolError("--mirror needs a repository in the header");
      mkdirSync(homeEntry(home, "mirrors"), { recursive: true, mode: 0o700 });
      const bundle = join(homeEntry(home, "mirrors"), `.incoming-${process.pid}.bundle`);
      try {
        await saveRest(rest, reader, bundle);
        received.mirror = await updateMirror(db, home, mirrorKey, header.repository, bundle, options.gitTimeoutMs);
      } finally {
        rmSync(bundle, { force: true });
      }
    }
    if (seedKey !== undefined) received.seed = updateSeed(home, seedKey, header.seed?.content ?? null);
  });
  writeStdout(`${JSON.stringify(received)}\n`);
  return 0;
}

/** The first line of stdin as the header, and the bytes that came after it in the same chunk. */
async function readHeader(reader: { read(): Promise<{ done: boolean; value?: Uint8Array }> }): Promise<{ header: ReceiveHeader; rest: Uint8Array }> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done || !value) throw new ProtocolError("receive-source: stdin ended before the header line");
    const nl = value.indexOf(0x0a);
    if (nl === -1) {
      parts.push(value);
      total += value.length;
      if (total > MAX_HEADER_BYTES) throw new ProtocolError(`receive-source: header line longer than ${MAX_HEADER_BYTES} bytes`);
      continue;
    }
    parts.push(value.subarray(0, nl));
    const text = Buffer.concat(parts);
    return { header: parseWire(ReceiveHeader, text, "receive-source header"), rest: value.subarray(nl + 1) };
  }
}
