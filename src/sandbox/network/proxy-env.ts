/**
 * What a workload under an allowlist is told about its way out: the standard proxy variables,
 * pointing at the forwarder's loopback port. They are the one exception to the exact
 * environment rule, and a convenience only: the policy holds whether a program reads them or
 * not (a program that ignores them finds no route at all).
 *
 * One port serves all three protocols (proxy.ts tells them apart by the first byte):
 * HTTP_PROXY/HTTPS_PROXY for curl, git over HTTPS, npm, pip and Claude Code (HTTPS goes
 * through CONNECT, so the scheme is http:// for both), ALL_PROXY as `socks5h://` so SOCKS
 * clients let the proxy resolve names (no DNS exists inside), NO_PROXY for the sandbox's own
 * loopback, which is its own and needs no proxy.
 *
 * Node's own `fetch` reads these only with NODE_USE_ENV_PROXY=1 (or --use-env-proxy), from
 * Node v24.0.0 and v22.21.0 (fetch); http/https.request and the global Agent follow from
 * v24.5.0 and v22.21.0. Node 20 and older ignore them. Sources: nodejs doc/api/cli.md
 * (`NODE_USE_ENV_PROXY=1`, "added: v24.0.0, v22.21.0"), the v24.5.0 and v22.21.0 release notes
 * (#57165 fetch, #58980 http/https). Setting it is harmless for every other program.
 */

/** Hosts that never go through the proxy: the sandbox's own loopback. */
const LOOPBACK = "localhost,127.0.0.1,::1";

/** What the workload's environment gains under an allowlist: the sandbox's own EGRESS_PORT (egress-plan.ts), or on macOS the proxy's port on the host's loopback. */
export function proxyEnvironment(port: number): Record<string, string> {
  const http = `http://127.0.0.1:${port}`;
  const socks = `socks5h://127.0.0.1:${port}`;
  return {
    HTTP_PROXY: http,
    HTTPS_PROXY: http,
    http_proxy: http,
    https_proxy: http,
    ALL_PROXY: socks,
    all_proxy: socks,
    NO_PROXY: LOOPBACK,
    no_proxy: LOOPBACK,
    NODE_USE_ENV_PROXY: "1",
  };
}
