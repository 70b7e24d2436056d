import { $ } from "zx";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** Flags every build gets: the binary runs inside untrusted workspaces, so it never autoloads
 * a `.env`, `bunfig.toml` (preload = code execution), `tsconfig.json` or `package.json`. */
export const HARDENING_FLAGS = [
  "--no-compile-autoload-dotenv",
  "--no-compile-autoload-bunfig",
  "--no-compile-autoload-tsconfig",
  "--no-compile-autoload-package-json",
];

/**
 * Measured on Linux x64 (see the commit introducing this): minify + bytecode start fastest.
 * `--splitting` makes each operation's `import()` (the command table, src/cli.ts) a chunk of its own inside
 * the executable, so a call evaluates only its operation's modules: `describe` went from
 * ~2.5× to ~1.1× the empty program (bench/README.md, "Start-up").
 */
export const SPEED_FLAGS = ["--minify", "--bytecode", "--format=esm", "--splitting"];

export const ROOT = join(import.meta.dir, "..");

/** The version in package.json. */
export function packageVersion(): string {
  return JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
}

/** Compiles src/main.ts into one executable for `target` (undefined = this machine). */
export async function compile(outfile: string, version: string, target?: string): Promise<void> {
  const flags = [
    "build",
    "--compile",
    ...HARDENING_FLAGS,
    ...SPEED_FLAGS,
    `--define=PASEO_HOST_RUNTIME_VERSION=${JSON.stringify(version)}`,
    ...(target ? [`--target=${target}`] : []),
    join(ROOT, "src/main.ts"),
    "--outfile",
    outfile,
  ];
  await $({ quiet: true, cwd: ROOT })`${process.execPath} ${flags}`;
}
