import { ProtocolError } from "./errors.ts";

/**
 * Strict UTF-8, the one decoder of wire bytes. `fatal`: invalid UTF-8 is an error, never
 * silently replaced by U+FFFD. `ignoreBOM`: a leading U+FEFF stays in the text, where JSON.parse
 * rejects it, instead of the decoder silently dropping bytes that are not canonical.
 */
export function strictUtf8(): TextDecoder {
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
}

/** Bytes our own binary wrote as JSON (a remote host's answers): text, or a ProtocolError naming `what`. */
export function decodeOwnOutput(bytes: Uint8Array, what: string): string {
  try {
    return strictUtf8().decode(bytes);
  } catch {
    throw new ProtocolError(`invalid ${what}: not valid UTF-8`);
  }
}
