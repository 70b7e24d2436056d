import { ProtocolError } from "./errors.ts";

/**
 * Strict UTF-8, the one decoder of wire bytes. `fatal`: invalid UTF-8 is an error, never
 * silently replaced by U+FFFD. `ignoreBOM`: a leading U+FEFF stays in the text, where JSON.parse
 * rejects it, instead of the decoder silently dropping bytes that are not canonical.
 */
export function strictUtf8(): TextDecoder {
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
}

/**
 * `bytes` as text, or null when they are not valid UTF-8 (the fatal decoder throws a
 * TypeError: that, and nothing else, is tolerated). `decoder` for a caller that keeps one.
 */
export function utf8OrNull(bytes: Uint8Array, decoder = strictUtf8()): string | null {
  try {
    return decoder.decode(bytes);
  } catch (error) {
    if (error instanceof TypeError) return null;
    throw error;
  }
}

/** Bytes our own binary wrote as JSON (a remote host's answers): text, or a ProtocolError naming `what`. */
export function decodeOwnOutput(bytes: Uint8Array, what: string): string {
  const text = utf8OrNull(bytes);
  if (text === null) throw new ProtocolError(`invalid ${what}: not valid UTF-8`);
  return text;
}
