/**
 * The entry point. A bare `describe` is answered here, before the command table and its grammar
 * load: the daemon asks it of every runtime it configures, and its answer is a constant fixed at
 * build time, so the only cost worth having is the process's start. Loading the dispatch first
 * cost describe ~1.2 ms over the empty program's ~5.5 (bench/README.md, "The last aims, against
 * the engine's floors"). Every other
 * call, `describe` with anything beside it included (`--help`, a usage error, `--remote`), goes
 * through the table (src/dispatch.ts), where describe is registered like every command.
 */
import { mark } from "./trace.ts";
import { describe } from "./protocol-ops/describe.ts";

mark("main");
const argv = process.argv.slice(2);
const bareDescribe = argv.length === 1 && argv[0] === "describe";
let code: number;
try {
  code = bareDescribe ? await describe() : await (await import("./dispatch.ts")).dispatch(argv);
} catch (error) {
  // Whatever a call throws (describe's stdout full or closed, too): said on stderr, exit 1.
  (await import("./output.ts")).diagnose(error instanceof Error ? error.message : String(error));
  code = 1;
}
process.exit(code);
