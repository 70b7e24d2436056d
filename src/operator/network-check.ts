/**
 * doctor's proof of the network allowlist, end to end, by the runtime's own machinery: a real
 * sandbox (bwrap, its own network namespace, the sandbox init and its forwarder on the
 * sandbox's loopback) whose only way out is the policy proxy on a Unix socket, and inside it a
 * program run by this binary's embedded engine that asks the proxy, through the proxy variables
 * a workload gets, for
 *
 * - this check's own server on 127.0.0.1 (allowed by an entry naming it): must answer;
 * - a host not listed: must be refused by the allowlist;
 * - 169.254.169.254, the cloud metadata endpoint, as an address, with 0.0.0.0/0:80 on the
 *   list: must be refused by the address check, before any connection;
 * - the same server directly, ignoring the proxy: must find no way out.
 *
 * The policy is the configured allowlist (when there is one) plus those two entries. Whatever
 * the policy decides, no packet leaves loopback: this proxy resolves no name and connects only
 * to the check's own server (a policy that admitted anything else fails the check instead).
 */
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { closeDescriptor, openDirectory } from "../platform/directory.ts";
import { memoryFile } from "../platform/libc/descriptors.ts";
import { isLinux } from "../platform/os.ts";
import type { RuntimeOptions } from "../options.ts";
import { bwrapDescriptors, SANDBOX_INIT_SOURCE, sandboxInitCommand, sandboxLaunch, sandboxRequest } from "../sandbox/launch.ts";
import { compileAllowlist } from "../sandbox/network/allowlist.ts";
import { EGRESS_SOCKET } from "../sandbox/network/egress-plan.ts";
import { startPolicyProxy, type RefusalEvent } from "../sandbox/network/proxy.ts";
import { systemConnector, type Connector } from "../sandbox/network/upstream.ts";
import { SandboxedWorkload, SandboxRefused } from "../sandbox/sandboxed-workload.ts";
import { isAllowlist } from "../sandbox/settings.ts";
import { sandboxTool, SandboxUnavailable } from "../sandbox/tool.ts";
import { filesToShow, type SandboxView } from "../sandbox/view.ts";
import { inWords, type Check, type CheckStatus } from "./report.ts";

/** A name no allowlist should hold (`.invalid` is reserved, RFC 6761): the refused request. */
export const REFUSED_HOST = "paseo-doctor-refused.invalid";
/** The cloud metadata endpoint, asked for by address. */
export const METADATA_ADDRESS = "169.254.169.254";
/** How long the sandboxed check may take before it is killed. */
const CHECK_TIMEOUT_MS = 15_000;

/** What the program inside reports: each request's HTTP status (or socket error), and the direct attempt's outcome. */
interface Answers {
  allowed: Answer;
  refused: Answer;
  metadata: Answer;
  bypass: string;
}
type Answer = { status: number; body: string } | { error: string };

/** The program the engine runs inside: three requests to the proxy named by HTTP_PROXY, one direct connection. */
const PROGRAM = `import { connect } from "node:net";
const proxy = new URL(process.env.HTTP_PROXY);
const ask = (url) => new Promise((resolve) => {
  const socket = connect(Number(proxy.port), proxy.hostname);
  const chunks = [];
  socket.on("data", (chunk) => chunks.push(chunk));
  socket.on("error", (error) => resolve({ error: error.code ?? error.message }));
  socket.on("close", () => {
    const text = Buffer.concat(chunks).toString("latin1");
    resolve({ status: Number(text.split(" ")[1]), body: text.slice(text.indexOf("\\r\\n\\r\\n") + 4) });
  });
  socket.write("GET " + url + " HTTP/1.1\\r\\nHost: " + new URL(url).host + "\\r\\nConnection: close\\r\\n\\r\\n");
});
const direct = (port) => new Promise((resolve) => {
  const socket = connect(port, "127.0.0.1");
  socket.on("connect", () => { socket.destroy(); resolve("connected"); });
  socket.on("error", (error) => resolve(error.code ?? error.message));
});
const [allowed, refused, metadata, port] = process.argv.slice(-4);
console.log(JSON.stringify({ allowed: await ask(allowed), refused: await ask(refused), metadata: await ask(metadata), bypass: await direct(Number(port)) }));
`;

/**
 * The network checks of `doctor`: under a configured allowlist a failure fails doctor; without
 * one (Linux, bwrap present) the same proof runs and a failure is a warning, since nothing uses
 * it yet. The proof is Linux-only (bwrap's network namespace): on macOS the allowlist runs
 * through Seatbelt (seatbelt.ts), which doctor does not prove; said when one is configured.
 */
export async function checkNetworkPolicy(options: RuntimeOptions): Promise<Check[]> {
  const configured = isAllowlist(options.network) ? options.network.allow : null;
  const failing: CheckStatus = configured ? "fail" : "warn";
  if (!isLinux) {
    if (!configured) return [];
    return [{ name: "network policy", status: "skip", detail: 'not checked: doctor proves options.network {"allow": [...]} on Linux only (a network namespace of the sandbox\'s own); here the allowlist runs through the Seatbelt profile, unproven by doctor' }];
  }
  let tool: string;
  try {
    tool = sandboxTool();
  } catch (error) {
    if (!(error instanceof SandboxUnavailable)) throw error;
    return [{ name: "network policy", status: configured ? "fail" : "skip", detail: configured ? error.message : "not checked: a network allowlist needs the sandbox, and bwrap is not on PATH" }];
  }
  const scratch = mkdtempSync(join(tmpdir(), "phr-doctor-net-"));
  const token = `paseo-doctor-${crypto.randomUUID()}`;
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(token) });
  const refusals: RefusalEvent[] = [];
  const attempts: string[] = [];
  const errors: string[] = [];
  const port = server.port!;
  const entries = [...(configured ?? []), `127.0.0.1:${port}`, "0.0.0.0/0:80"];
  const proxy = await startPolicyProxy({
    socketPath: join(scratch, "egress.sock"),
    allowlist: compileAllowlist(entries),
    resolve: resolvesNothing,
    connect: onlyTo(`127.0.0.1:${port}`, attempts),
    onDenied: (event) => refusals.push(event),
    onFailure: (event) => refusals.push(event),
    onError: (error) => errors.push(error.message),
  });
  try {
    const answers = await runInside(tool, scratch, entries, [`http://127.0.0.1:${port}/`, `http://${REFUSED_HOST}/`, `http://${METADATA_ADDRESS}/latest/meta-data/`, String(port)]);
    if (typeof answers === "string") {
      // Without an allowlist configured, a sandbox that cannot start here is the sandbox line's business, not a warning of its own.
      if (!configured) return [{ name: "network policy", status: "skip", detail: `not checked: the sandboxed check did not run (${answers})` }];
      return [{ name: "network policy", status: "fail", detail: `the sandboxed check did not run: ${answers}`, hint: inWords("the sandbox check above says what bwrap needs; a network allowlist needs the same") }];
    }
    return judge(answers, { token, port, refusals, attempts, errors, failing });
  } finally {
    server.stop(true);
    await proxy.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** This check's proxy resolves no name: a name the policy admits is a failure, never a DNS query. */
function resolvesNothing(name: string): Promise<never> {
  return Promise.reject(Object.assign(new Error(`doctor's check resolves no name (${name})`), { code: "ENOTFOUND" }));
}

/** A connector that reaches only `allowed` (the check's own server); any other address fails at once, no packet sent. */
function onlyTo(allowed: string, attempts: string[]): Connector {
  return async (address, port) => {
    attempts.push(`${address}:${port}`);
    if (`${address}:${port}` === allowed) return systemConnector(address, port);
    throw Object.assign(new Error("doctor's check connects only to its own server"), { code: "EACCES" });
  };
}

/**
 * The program run in a sandbox as a workload is (bwrap with the mount plan of `view`, the
 * sandbox init, its forwarder to the proxy's socket shown at EGRESS_SOCKET), its answers, or
 * why it did not run.
 */
async function runInside(tool: string, scratch: string, entries: string[], args: string[]): Promise<Answers | string> {
  const script = join(scratch, "check.mjs");
  writeFileSync(script, PROGRAM);
  const view: SandboxView = { root: null, readWrite: [], readOnly: [scratch], network: { allow: entries }, overlays: [{ source: join(scratch, "egress.sock"), target: EGRESS_SOCKET, writable: true }] };
  view.readOnly.push(...filesToShow([process.execPath], view));
  const engine = sandboxInitCommand();
  const launch = { program: process.execPath, argv: [process.execPath, ...engine.argv.slice(1, 4), script, ...args], env: engine.env };
  const spawned = sandboxLaunch(launch, view, tool, engine);
  const held: number[] = [];
  try {
    const cwd = openDirectory(scratch);
    held.push(cwd);
    const request = sandboxRequest(launch, "pipes", view, { path: scratch, fd: cwd }, true);
    const init = memoryFile("paseo-sandbox-init", SANDBOX_INIT_SOURCE);
    held.push(init);
    const stdio = [openSync("/dev/null", "r"), openSync(join(scratch, "out"), "w"), openSync(join(scratch, "err"), "w")];
    held.push(...stdio);
    const bwrap = Bun.spawn([spawned.program, ...spawned.argv.slice(1)], { argv0: spawned.argv[0], env: spawned.env, stdio: bwrapDescriptors(null, init, stdio) as never });
    for (const fd of held.splice(0)) closeDescriptor(fd);
    const workload = new SandboxedWorkload(bwrap, request);
    try {
      await workload.start();
    } catch (error) {
      // As an exec's failed launch (exec/launch.ts): the sandbox ends whatever went wrong; only a refusal means "did not run".
      workload.kill();
      await workload.release();
      if (error instanceof SandboxRefused) return error.message;
      throw error;
    }
    workload.confirmed();
    const timer = setTimeout(() => workload.kill(), CHECK_TIMEOUT_MS);
    await workload.exited;
    clearTimeout(timer);
    await workload.release();
    const out = readFileSync(join(scratch, "out"), "utf8").trim();
    if (workload.exitCode !== 0 || out === "") {
      const err = readFileSync(join(scratch, "err"), "utf8").trim().slice(0, 500);
      return `the program inside ended with ${workload.signalCode ?? `exit ${workload.exitCode}`}${err ? `: ${err}` : ""}`;
    }
    return JSON.parse(out) as Answers;
  } finally {
    for (const fd of held) closeDescriptor(fd);
  }
}

interface Seen {
  token: string;
  port: number;
  refusals: RefusalEvent[];
  attempts: string[];
  errors: string[];
  failing: CheckStatus;
}

function said(answer: Answer): string {
  return "error" in answer ? `a socket error (${answer.error})` : `HTTP ${answer.status}`;
}

/** The four facts as check lines, each with what to do when it does not hold. */
function judge(answers: Answers, seen: Seen): Check[] {
  const { token, port, refusals, attempts, failing } = seen;
  const own = `127.0.0.1:${port}`;
  const path = "bwrap's network namespace, the sandbox init's forwarder on its loopback, the policy proxy on a Unix socket";
  const refusal = (match: (event: RefusalEvent) => boolean) => refusals.find(match);
  const checks: Check[] = [];

  const allowed = answers.allowed;
  checks.push(
    "status" in allowed && allowed.status === 200 && allowed.body === token
      ? { name: "network allowed", status: "ok", detail: `a sandboxed program reached this check's server on ${own} through the proxy (${path})` }
      : { name: "network allowed", status: failing, detail: `a sandboxed program asking the proxy for this check's server on ${own} got ${said(allowed)}${seen.errors.length ? `; the proxy reported: ${seen.errors.join("; ")}` : ""}`, hint: inWords("the runtime log's net-error lines say what failed; a workload under the allowlist would not reach what it allows either") },
  );

  const host = refusal((event) => event.host === REFUSED_HOST && /not on the allowlist/.test(event.reason));
  checks.push(
    "status" in answers.refused && answers.refused.status === 403 && host
      ? { name: "network refused", status: "ok", detail: `${REFUSED_HOST}, a host not listed, was refused by the proxy (HTTP 403: ${host.reason})` }
      : { name: "network refused", status: failing, detail: `${REFUSED_HOST}, a host not listed, got ${said(answers.refused)}`, hint: inWords(`an allow entry matches ${REFUSED_HOST} (a wildcard too wide?): name the hosts the workload needs`) },
  );

  const metadata = refusal((event) => event.address === METADATA_ADDRESS && /link-local/.test(event.reason));
  const dialled = attempts.some((attempt) => attempt.startsWith(`${METADATA_ADDRESS}:`));
  checks.push(
    "status" in answers.metadata && answers.metadata.status === 403 && metadata && !dialled
      ? { name: "network metadata", status: "ok", detail: `${METADATA_ADDRESS} (cloud metadata), asked for by address with 0.0.0.0/0 allowed, was refused by the address check before any connection (${metadata.reason})` }
      : {
          name: "network metadata",
          status: failing,
          detail: `${METADATA_ADDRESS} (cloud metadata) got ${said(answers.metadata)}${dialled ? "; the policy admitted it (this check sends no packet there)" : ""}`,
          hint: inWords(`remove the allow entry that names ${METADATA_ADDRESS} or a range inside 169.254.0.0/16: it hands out the machine's credentials`),
        },
  );

  checks.push(
    answers.bypass === "connected"
      ? { name: "network bypass", status: failing, detail: `a direct connection to ${own}, ignoring the proxy, was made from inside the sandbox`, hint: inWords("the sandbox did not get a network namespace of its own: check bwrap's --unshare-net on this host") }
      : { name: "network bypass", status: "ok", detail: `a direct connection to ${own}, ignoring the proxy, failed (${answers.bypass}): the proxy is the only way out` },
  );
  return checks;
}
