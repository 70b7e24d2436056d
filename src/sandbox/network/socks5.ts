/**
 * The SOCKS5 side (RFC 1928): no authentication, the CONNECT command only, addresses as a
 * domain name, IPv4 or IPv6. BIND and UDP ASSOCIATE are answered "command not supported":
 * the proxy carries TCP streams it can check, nothing that listens or sends datagrams.
 */
import type { Conn } from "./conn.ts";
import { formatIp } from "./ip.ts";
import { parseHost, type Target } from "./target.ts";
import type { OpeningReader } from "./opening-reader.ts";
import { errnoOf } from "../../platform/errno.ts";

export const SOCKS_VERSION = 5;

/** Reply codes (RFC 1928 §6). */
export const Reply = {
  succeeded: 0,
  generalFailure: 1,
  notAllowed: 2,
  networkUnreachable: 3,
  hostUnreachable: 4,
  connectionRefused: 5,
  commandNotSupported: 7,
  addressTypeNotSupported: 8,
} as const;

const NO_AUTHENTICATION = 0;
const NO_ACCEPTABLE_METHOD = 0xff;
const CONNECT = 1;

/** A reply with an unspecified bound address (0.0.0.0:0): clients of a CONNECT do not use it. */
export function socksReply(code: number): Buffer {
  return Buffer.from([SOCKS_VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}

/** The reply for a failed upstream connection, from its errno. */
export function replyForFailure(error: unknown): number {
  const code = errnoOf(error);
  if (code === "ECONNREFUSED") return Reply.connectionRefused;
  if (code === "ENETUNREACH") return Reply.networkUnreachable;
  return code === "EHOSTUNREACH" || code === "ETIMEDOUT" ? Reply.hostUnreachable : Reply.generalFailure;
}

export type SocksRequest =
  | { ok: true; target: Target; host: string }
  /** Refused in the handshake: the answer to send before closing; `host` is what the client named, if it got that far. */
  | { ok: false; reason: string; host: string | null; answer: Buffer };

/** Runs the handshake up to the client's request (the first byte, 5, is still unread in `reader`). */
export async function readSocksRequest(reader: OpeningReader, client: Conn): Promise<SocksRequest> {
  const [, count] = await reader.bytes(2);
  const methods = await reader.bytes(count!);
  if (!methods.includes(NO_AUTHENTICATION)) {
    return { ok: false, reason: "SOCKS5 without the no-authentication method", host: null, answer: Buffer.from([SOCKS_VERSION, NO_ACCEPTABLE_METHOD]) };
  }
  client.write(Buffer.from([SOCKS_VERSION, NO_AUTHENTICATION]));
  const [version, command, , addressType] = await reader.bytes(4);
  if (version !== SOCKS_VERSION) return refuse(Reply.generalFailure, "a SOCKS request of another version", null);
  const host = await readAddress(reader, addressType!);
  if (host === null) return refuse(Reply.addressTypeNotSupported, `SOCKS address type ${addressType} is not supported`, null);
  const port = (await reader.bytes(2)).readUInt16BE(0);
  if (command !== CONNECT) return refuse(Reply.commandNotSupported, `SOCKS command ${command} is not supported (only CONNECT)`, host);
  const parsed = parseHost(host, addressType === 4);
  if (!parsed || port === 0) return refuse(Reply.generalFailure, "not a valid host and port", host);
  return { ok: true, target: { host: parsed, port }, host };
}

function refuse(code: number, reason: string, host: string | null): SocksRequest {
  return { ok: false, reason, host, answer: socksReply(code) };
}

/** The address as text (IPv6 in canonical text, without brackets), or null for an unknown type. */
async function readAddress(reader: OpeningReader, addressType: number): Promise<string | null> {
  if (addressType === 1) return [...(await reader.bytes(4))].join(".");
  if (addressType === 4) return formatIp({ family: 6, value: BigInt(`0x${(await reader.bytes(16)).toString("hex")}`) });
  if (addressType !== 3) return null;
  const [length] = await reader.bytes(1);
  return (await reader.bytes(length!)).toString("latin1");
}
