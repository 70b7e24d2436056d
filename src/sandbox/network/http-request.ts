/**
 * A proxy request's head, read strictly: `CONNECT host:port` (a tunnel) or an absolute-URI
 * request `GET http://host[:port]/path` (forwarded). The forwarded head is rewritten for the
 * upstream: origin-form target, Host from the URI, hop-by-hop and Proxy-* headers dropped,
 * `Connection: close`. One request per upstream connection: bytes the client sends after
 * the head go to the same upstream as they would through a CONNECT to it, and the client's
 * connection ends with the upstream's, so a second request is always checked on a connection
 * of its own.
 */
import { parseAuthority, type Target } from "./target.ts";

export type ProxyRequest =
  | { kind: "connect"; target: Target; authority: string }
  | { kind: "forward"; target: Target; authority: string; upstreamHead: Buffer }
  /** What the client gets back, and why (the reason is also what is reported). */
  | { kind: "bad"; reason: string; authority: string | null };

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const REQUEST_LINE = new RegExp(`^(${TOKEN}) (\\S+) (HTTP/1\\.[01])$`);
const HEADER_LINE = new RegExp(`^(${TOKEN}):[ \\t]*(.*?)[ \\t]*$`);
/** Bytes never allowed in a head: controls other than tab (a bare CR or LF would split a line two ways). */
const FORBIDDEN = /[\x00-\x08\x0a-\x1f\x7f]/;

/**
 * Headers not forwarded: those meant for this hop only (RFC 9110 §7.6.1), the client's words to
 * the proxy, and Host, which is not hop-by-hop but is replaced by the URI's (the host admitted).
 */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "upgrade", "host"]);

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  502: "Bad Gateway",
  504: "Gateway Timeout",
};

/** A complete response from the proxy itself: the status, and a one-line body saying why. */
export function proxyResponse(status: number, reason: string): string {
  const body = `paseo network policy: ${reason}\n`;
  return `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

export const CONNECT_ESTABLISHED = "HTTP/1.1 200 Connection established\r\n\r\n";

/** `head` ends with CRLF CRLF (OpeningReader.head). */
export function readProxyRequest(head: Buffer): ProxyRequest {
  const lines = head.toString("latin1").slice(0, -4).split("\r\n");
  if (lines.some((line) => FORBIDDEN.test(line))) return bad("a control character or a bare CR or LF in the request head");
  const request = REQUEST_LINE.exec(lines[0]!);
  if (!request) return bad("not an HTTP/1 request line");
  const [, method, uri, version] = request as unknown as [string, string, string, string];
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const header = HEADER_LINE.exec(line);
    if (!header) return bad(line.startsWith(" ") || line.startsWith("\t") ? "folded header lines are not accepted" : "a malformed header line");
    headers.push([header[1]!, header[2]!]);
  }
  if (method === "CONNECT") {
    const target = parseAuthority(uri, null);
    return target ? { kind: "connect", target, authority: uri } : bad("CONNECT needs host:port", uri);
  }
  return forward(method, uri, version, headers);
}

function bad(reason: string, authority: string | null = null): ProxyRequest {
  return { kind: "bad", reason, authority };
}

function forward(method: string, uri: string, version: string, headers: [string, string][]): ProxyRequest {
  const absolute = /^http:\/\/([^/?#]*)(.*)$/i.exec(uri);
  if (!absolute) return bad(/^https:/i.test(uri) ? "https:// goes through CONNECT" : "not a proxy request (an absolute http:// URI or CONNECT)");
  const [, authority, rest] = absolute as unknown as [string, string, string];
  if (authority.includes("@")) return bad("credentials in a proxied URI are not forwarded", null);
  const target = parseAuthority(authority, 80);
  if (!target) return bad("not a valid host and port in the URI", authority);
  const path = rest === "" ? "/" : rest.startsWith("/") ? rest : `/${rest}`;
  const named = new Set(headers.filter(([name]) => name.toLowerCase() === "connection").flatMap(([, value]) => value.toLowerCase().split(",").map((token) => token.trim())));
  const kept = headers.filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase()) && !named.has(name.toLowerCase()) && !/^proxy-/i.test(name));
  const lines = [`${method} ${path} ${version}`, `Host: ${authority}`, ...kept.map(([name, value]) => `${name}: ${value}`), "Connection: close"];
  return { kind: "forward", target, authority, upstreamHead: Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1") };
}
