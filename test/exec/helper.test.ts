import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";

/** A helper written for the test: prints its argv, cwd and env as JSON. */
const JS_HELPER = `#!/usr/bin/env node
console.log(JSON.stringify({ kind: "js", argv: process.argv.slice(2), cwd: process.cwd(), env: process.env }));
`;
const SH_HELPER = `#!/bin/sh
printf '{"kind":"sh","argv":"%s","cwd":"%s"}\\n' "$*" "$(pwd)"
`;

let ws: ReadyWorkspace;
let dir: { path: string; cleanup: () => void };

beforeAll(async () => {
  ws = await readyWorkspace("helper");
  dir = tempDir("phr-helper-");
});
afterAll(() => {
  ws.cleanup();
  dir.cleanup();
});

function writeHelper(path: string, text: string): string {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, 0o755);
  return path;
}

/** The daemon's helper call: argv [name, op], env {}, no cwd, purpose workspace-helper. */
async function callHelper(fields: Record<string, unknown> = {}, bin?: string): Promise<ExecResult> {
  const env = envelope(["paseo-workspace-helper", "describe"], { purpose: { kind: "workspace-helper" }, env: {}, ...fields });
  const handle = startExec(ws.id, { ...env, options: { ...ws.options, ...(fields.options as object) } }, { bin });
  handle.closeStdin();
  return handle.done;
}

describe("paseo-workspace-helper resolution", () => {
  test("through the envelope PATH first", async () => {
    const bin = join(dir.path, "path-bin");
    writeHelper(join(bin, "paseo-workspace-helper"), SH_HELPER);
    const result = await callHelper({ env: { PATH: bin } });
    expect(result.violation).toBeNull();
    expect(JSON.parse(result.stdout.toString())).toEqual({ kind: "sh", argv: "describe", cwd: ws.root });
  });

  test("through options.helperPath, a JavaScript helper run by the embedded engine with an empty env", async () => {
    const helper = writeHelper(join(dir.path, "configured", "helper.mjs"), JS_HELPER);
    const result = await callHelper({ options: { helperPath: helper } });
    expect(result.violation).toBeNull();
    expect(result.code).toBe(0);
    const seen = JSON.parse(result.stdout.toString());
    expect(seen.kind).toBe("js");
    expect(seen.argv).toEqual(["describe"]);
    expect(seen.cwd).toBe(ws.root);
    expect(seen.env).toEqual({ BUN_BE_BUN: "1" });
  });

  test("beside the runtime's own executable (the installer's layout), node shebang detected", async () => {
    const installDir = join(dir.path, "install");
    mkdirSync(installDir, { recursive: true });
    const runtime = join(installDir, "paseo-host-runtime");
    copyFileSync(BIN, runtime);
    chmodSync(runtime, 0o755);
    writeHelper(join(installDir, "paseo-workspace-helper"), JS_HELPER);
    const result = await callHelper({}, runtime);
    expect(result.violation).toBeNull();
    expect(JSON.parse(result.stdout.toString())).toMatchObject({ kind: "js", argv: ["describe"], cwd: ws.root });
  });

  test("a workspace bunfig.toml preload or .env never runs with a JavaScript helper", async () => {
    writeFileSync(join(ws.root, "bunfig.toml"), 'preload = ["./evil.js"]\n');
    writeFileSync(join(ws.root, "evil.js"), `require("fs").writeFileSync(${JSON.stringify(join(ws.root, "MARKER"))}, "x");\n`);
    writeFileSync(join(ws.root, ".env"), "EVIL=1\n");
    const helper = writeHelper(join(dir.path, "configured2", "helper.js"), JS_HELPER);
    const result = await callHelper({ options: { helperPath: helper } });
    expect(JSON.parse(result.stdout.toString()).env).toEqual({ BUN_BE_BUN: "1" });
    expect(await Bun.file(join(ws.root, "MARKER")).exists()).toBe(false);
  });

  test("not found anywhere: fails before launch, listing where it looked", async () => {
    const result = await callHelper();
    expect(result.code).toBe(127);
    expect(result.events).toEqual([]);
    expect(result.stderr).toContain("workspace helper");
    expect(result.stderr).toContain("options.helperPath (not set)");
    expect(result.stderr).toContain("paseo-workspace-helper");
  });
});
