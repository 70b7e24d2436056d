/** A message or frame that breaks protocol v1. The message is meant for stderr as is. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
}

/**
 * A message refused for its size or nesting before anything else looked at it. Unlike other
 * refusals of an envelope, it is also an `error` event where fd 4 is open, and a line of the
 * runtime log even when no option could be read (the sender is broken, or probing).
 */
export class LimitError extends ProtocolError {
  override name = "LimitError";
}

/** `error` with `prefix` before its message, of the same class (a LimitError stays one). */
export function prefixed(error: unknown, prefix: string): ProtocolError {
  const message = `${prefix}${error instanceof Error ? error.message : String(error)}`;
  return error instanceof LimitError ? new LimitError(message) : new ProtocolError(message);
}
