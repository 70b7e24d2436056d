/**
 * The official helper works sandboxed (issue 22): installed as npm installs it, a `bin` symlink
 * into node_modules/@getpaseo/workspace-helper/dist/executable.mjs that imports a dependency of
 * its own, it answers `describe` and `fs-list` under the sandbox. Here a packed stand-in
 * package with a dependency, installed offline from local tarballs; the sandbox shows its
 * package directory and the node_modules its imports resolve in, read-only. Before, only the
 * script file was shown and its import failed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { tempDir } from "../../kit/scratch.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { missingTools } from "../support/tools.ts";
import { writeFiles } from "../support/git.ts";

const missing = missingTools("exec/sandbox-helper.test.ts", ["bwrap", "npm"]);

let lab: { path: string; cleanup: () => void };
let ws: ReadyWorkspace;
/** `node_modules/.bin/paseo-workspace-helper` of the install. */
let helper: string;

/** Runs `npm` for the fixture, offline and with a cache of its own (never the daemon user's). */
function npm(cwd: string, ...args: string[]): void {
  const result = Bun.spawnSync({ cmd: ["npm", ...args, "--offline", "--no-audit", "--no-fund", "--silent"], cwd, env: { ...process.env, npm_config_cache: join(lab.path, "npm-cache") }, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`npm ${args.join(" ")} failed: ${result.stderr.toString()}`);
}

async function callHelper(argv: string[]): Promise<ExecResult> {
  const handle = startExec(ws.id, envelope(["paseo-workspace-helper", ...argv], { purpose: { kind: "workspace-helper" }, env: {}, options: { ...ws.options, helperPath: helper } }));
  handle.closeStdin();
  return handle.done;
}

describe.skipIf(missing.length > 0)("an npm-installed helper under the sandbox", () => {
  beforeAll(async () => {
    lab = tempDir("phr-sbx-helper-");
    writeFiles(join(lab.path, "dep"), {
      "package.json": JSON.stringify({ name: "phr-helper-dep", version: "1.0.0", type: "module", exports: "./index.mjs" }),
      "index.mjs": `import { readdirSync } from "node:fs";\nexport const entries = (dir) => readdirSync(dir).sort().map((name) => ({ name }));\n`,
    });
    writeFiles(join(lab.path, "helper"), {
      "package.json": JSON.stringify({ name: "@getpaseo/workspace-helper", version: "0.0.0-test", type: "module", bin: { "paseo-workspace-helper": "dist/executable.mjs" }, dependencies: { "phr-helper-dep": "1.0.0" } }),
      "dist/executable.mjs": [
        "#!/usr/bin/env node",
        'import { entries } from "phr-helper-dep";',
        "const [op, path] = process.argv.slice(2);",
        'if (op === "describe") console.log(JSON.stringify({ protocolVersion: 1, version: "0.0.0-test", capabilities: ["files", "watch", "resolve-command"] }));',
        'else if (op === "fs-list") console.log(JSON.stringify({ entries: entries(path ?? ".") }));',
        'else if (op === "write-self") { try { (await import("node:fs")).appendFileSync(new URL(import.meta.url), "//"); console.log("written"); } catch (error) { console.log(error.code); } }',
        "else process.exit(2);",
        "",
      ].join("\n"),
    });
    npm(join(lab.path, "dep"), "pack");
    npm(join(lab.path, "helper"), "pack");
    const install = join(lab.path, "install");
    writeFiles(install, { "package.json": "{}" });
    npm(install, "install", join(lab.path, "dep", "phr-helper-dep-1.0.0.tgz"), join(lab.path, "helper", "getpaseo-workspace-helper-0.0.0-test.tgz"));
    helper = join(install, "node_modules", ".bin", "paseo-workspace-helper");
    ws = await readyWorkspace("sandbox-helper", "seed", { isolation: "sandbox" });
    writeFiles(ws.root, { "a.txt": "a\n", "b/c.txt": "c\n" });
  });
  afterAll(() => {
    ws?.cleanup();
    lab?.cleanup();
  });

  test("describe answers through its bin symlink, its dependency imported from node_modules", async () => {
    const result = await callHelper(["describe"]);
    expect(result.stderr).toBe("");
    expect(result.violation).toBeNull();
    expect(JSON.parse(result.stdout.toString())).toEqual({ protocolVersion: 1, version: "0.0.0-test", capabilities: ["files", "watch", "resolve-command"] });
  });

  test("fs-list lists the workspace", async () => {
    const result = await callHelper(["fs-list", "."]);
    expect(result.stderr).toBe("");
    expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: 0, signal: null });
    expect(JSON.parse(result.stdout.toString())).toEqual({ entries: [{ name: "a.txt" }, { name: "b" }] });
  });

  test("its package directory is shown read-only", async () => {
    const result = await callHelper(["write-self"]);
    expect(result.stdout.toString()).toBe("EROFS\n");
  });
});
