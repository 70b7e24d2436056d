/**
 * Bad input through the compiled binary, driven like the daemon: the diagnostics quote none of
 * it (a token in a malformed request, envelope, option or config file never reaches stderr or
 * the log), and a message too large or too deeply nested is refused in its own words, with an
 * `error` event when fd 4 is open and a line in the runtime log even though no option could
 * be read (the log of the home the environment selects).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { runtimeLogPath } from "../support/store.ts";

setDefaultTimeout(60_000);

const TOKEN = "ghp_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lm";
/** What must never be printed or logged: enough of the token to be it. */
const SECRET = TOKEN.slice(4, 16);

let ws: ReadyWorkspace;
beforeAll(async () => (ws = await readyWorkspace("refusals")));
afterAll(() => ws.cleanup());

/** The runtime log of the workspace's home, as entries. */
function logEntries(): Record<string, unknown>[] {
  const path = runtimeLogPath(ws.home);
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

function logText(): string {
  const path = runtimeLogPath(ws.home);
  return existsSync(path) ? readFileSync(path, "utf8") : "";
}

/** `inspect` with `stdin` as the request, the environment's home being the workspace's. */
function inspect(stdin: string) {
  return runBinary(["inspect", "--workspace-id", ws.id], { stdin, env: { PASEO_HOST_RUNTIME_HOME: ws.home } });
}

/** An exec whose fd 3 gets `text` as the envelope line (the environment's home is the workspace's). */
async function execWith(text: string): Promise<ExecResult> {
  const handle = startExec(ws.id, {}, { holdEnvelope: true, env: { ...(process.env as Record<string, string>), PASEO_HOST_RUNTIME_HOME: ws.home } });
  handle.sendControl(`${text}\n`);
  handle.closeControls();
  handle.closeStdin();
  return await handle.done;
}

function envelopeText(fields: Record<string, unknown> = {}): string {
  return JSON.stringify(envelope(["/bin/true"], { options: ws.options, ...fields }));
}

describe("a token in bad input is never quoted", () => {
  test("a lifecycle request that is not valid JSON: where it broke, not the bytes", async () => {
    const result = await inspect(`{"protocolVersion":1,"options":{"lifecycleEnvironment":{"GITHUB_TOKEN":${TOKEN}}}}\n`);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("paseo-host-runtime: invalid lifecycle request: malformed JSON at byte 71: expected a JSON value (an object, array, string, number, true, false or null)\n");
  });

  test("an invalid option carrying a token: the field, what it must be, the type that came", async () => {
    const result = await inspect(`${JSON.stringify({ protocolVersion: 1, options: { ...ws.options, owner: [TOKEN] } })}\n`);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("options.owner must be a non-empty string without NUL, got an array");
    expect(result.stderr).not.toContain(SECRET);
  });

  test("a spawn envelope that is not valid JSON: refused like any bad envelope, the token not quoted", async () => {
    const text = envelopeText({ env: { PATH: "/usr/bin" } }).replace('"PATH":"/usr/bin"', `"PATH":"/usr/bin","TOKEN":${TOKEN}`);
    const result = await execWith(text);
    expect(result.code).toBe(1);
    expect(result.events).toEqual([]);
    expect(result.stderr).toContain("fd 3 control frame 1: invalid fd 3 control: malformed JSON at byte");
    expect(result.stderr).not.toContain(SECRET);
    expect(logText()).not.toContain(SECRET);
  });

  test("--options-json that is not valid JSON, and a config.json with a bad option value", async () => {
    const flag = await runBinary(["ls", "--home", ws.home, "--options-json", `{"lifecycleEnvironment":{"T":${TOKEN}}}`]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("--options-json is not valid JSON: malformed JSON at byte 29: expected a JSON value");
    expect(flag.stderr).not.toContain(SECRET);
    const config = join(ws.home, "..", "config.json");
    writeFileSync(config, JSON.stringify({ workspaceRuntimes: { r: { type: "command", command: [process.execPath], options: { stopTimeoutMs: TOKEN, lifecycleEnvironment: { T: 1 } } } } }));
    const checked = await runBinary(["config", "check", config, "--json"]);
    expect(checked.stdout).not.toContain(SECRET);
    writeFileSync(config, `{"workspaceRuntimes":{"r":{"options":{"T":${TOKEN}}}}}`);
    const broken = await runBinary(["config", "check", config]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain("is not valid JSON: malformed JSON at byte 42: expected a JSON value");
    expect(broken.stdout + broken.stderr).not.toContain(SECRET);
  });
});

describe("too deep and too large are refused in their own words, logged, and an error event on fd 4", () => {
  const deep = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

  test("a lifecycle request nested 1.5 million levels deep: `nested deeper than 128`, and a log line", async () => {
    const result = await inspect(`{"protocolVersion":1,"options":{"x":${deep(1_500_000)}}}\n`);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("paseo-host-runtime: invalid lifecycle request: nested deeper than 128 levels of arrays and objects\n");
    const line = logEntries().find((entry) => entry.op === "inspect" && entry.status === 1);
    expect(line).toMatchObject({ level: "error", event: "op", workspaceId: ws.id, message: "invalid lifecycle request: nested deeper than 128 levels of arrays and objects" });
  });

  test("a spawn envelope nested too deep: an error event, exit 1, a log line", async () => {
    const result = await execWith(envelopeText().replace('"options":{', `"options":{"x":${deep(300_000)},`));
    const message = "fd 3 control frame 1: invalid fd 3 control: nested deeper than 128 levels of arrays and objects";
    expect(result.code).toBe(1);
    expect(result.events).toEqual([{ type: "error", protocolVersion: 1, message }] as never);
    expect(result.stderr).toContain(message);
    expect(logEntries().filter((entry) => entry.op === "exec" && entry.message === message).map((entry) => entry.event)).toEqual(["exec-error", "exec"]);
  });

  test("a 2 MiB spawn envelope: `fd 3 frame larger than 1 MiB`, an error event, exit 1, a log line", async () => {
    const result = await execWith(envelopeText({ env: { BIG: "x".repeat(2 * 1024 * 1024) } }));
    const message = "fd 3 frame larger than 1 MiB (frame 1)";
    expect(result.code).toBe(1);
    expect(result.events).toEqual([{ type: "error", protocolVersion: 1, message }] as never);
    expect(result.stderr).toBe(`paseo-host-runtime: ${message}\n`);
    expect(logEntries().find((entry) => entry.op === "exec" && entry.event === "exec" && entry.message === message)).toMatchObject({ level: "error", outcome: "refused", status: 1, workspaceId: ws.id });
  });

  test("a lifecycle request larger than 4 MiB: its own words, and a log line", async () => {
    const result = await inspect(`{"protocolVersion":1,"options":{"x":"${"y".repeat(5 * 1024 * 1024)}"}}\n`);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("paseo-host-runtime: lifecycle request on stdin larger than 4 MiB\n");
    expect(logEntries().some((entry) => entry.op === "inspect" && entry.message === "lifecycle request on stdin larger than 4 MiB")).toBe(true);
  });
});
