/** Public v1 protocol: schemas, derived types, framing and the fd 4 lifecycle checker. */
export * from "./common.ts";
export * from "./signal.ts";
export * from "./dialect.ts";
export * from "./json.ts";
export * from "./describe.ts";
export * from "./lifecycle.ts";
export * from "./control.ts";
export * from "./events.ts";
export * from "./errors.ts";
export * from "./frame.ts";
export * from "./event-sequence.ts";
export * from "./utf8.ts";
export * from "./fds.ts";
export * from "./json-text.ts";
