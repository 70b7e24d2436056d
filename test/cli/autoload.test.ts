/**
 * The binary runs inside untrusted workspaces: a workspace's bunfig.toml (whose `preload`
 * is code execution) and .env must never be loaded. The build passes
 * --no-compile-autoload-{dotenv,bunfig,tsconfig,package-json}; this proves it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";

const DESCRIBE = `{"protocolVersion":1,"modes":["pipes","pty"],"reconcile":true}\n`;

/** A directory holding what a hostile workspace could hold; the preload leaves a marker. */
function hostileWorkspace(): { path: string; marker: string; cleanup: () => void } {
  const dir = tempDir("phr-autoload-");
  writeFileSync(
    join(dir.path, "evil.ts"),
    `require("node:fs").writeFileSync(require("node:path").join(import.meta.dir, "preload-ran"), "PASEO_X=" + process.env.PASEO_X + "\\n");\n`,
  );
  writeFileSync(join(dir.path, "bunfig.toml"), `preload = ["./evil.ts"]\n`);
  writeFileSync(join(dir.path, ".env"), "PASEO_X=1\n");
  writeFileSync(join(dir.path, "package.json"), `{"name":"evil","main":"evil.ts"}\n`);
  writeFileSync(join(dir.path, "tsconfig.json"), `{"compilerOptions":{"jsx":"react"}}\n`);
  return { ...dir, marker: join(dir.path, "preload-ran") };
}

let workspace: ReturnType<typeof hostileWorkspace>;
let control: ReturnType<typeof hostileWorkspace>;

beforeAll(() => {
  workspace = hostileWorkspace();
  control = hostileWorkspace();
});

afterAll(() => {
  workspace.cleanup();
  control.cleanup();
});

// BUN_OPTIONS would force a preload even into a hardened binary (see the platform notes):
// the daemon never sets it, and it must not leak in from whoever runs the tests.
const cleanEnv = { BUN_OPTIONS: undefined, PASEO_X: undefined };

describe("a workspace's bunfig.toml and .env are never loaded", () => {
  test("control: plain `bun` in that directory does run the preload and read the .env", async () => {
    const proc = Bun.spawn([process.execPath, "-e", "1"], {
      cwd: control.path,
      env: { ...process.env, ...cleanEnv } as Record<string, string | undefined> as Record<string, string>,
      stdout: "ignore",
      stderr: "ignore",
    });
    await proc.exited;
    expect(await Bun.file(control.marker).text()).toBe("PASEO_X=1\n");
  });

  test("describe from inside it is byte-identical and runs no preload", async () => {
    const outside = await runBinary(["describe"], { env: cleanEnv });
    const inside = await runBinary(["describe"], { cwd: workspace.path, env: cleanEnv });
    expect(outside).toEqual({ code: 0, signal: null, stdout: DESCRIBE, stderr: "" });
    expect(inside).toEqual(outside);
    expect(existsSync(workspace.marker)).toBe(false);
  });

  test("--version and --help from inside it are unchanged too", async () => {
    for (const args of [["--version"], ["--help"]]) {
      const outside = await runBinary(args, { env: cleanEnv });
      const inside = await runBinary(args, { cwd: workspace.path, env: cleanEnv });
      expect(inside).toEqual(outside);
    }
    expect(existsSync(workspace.marker)).toBe(false);
  });
});
