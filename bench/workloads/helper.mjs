#!/usr/bin/env node
// The bench's stand-in for Paseo's workspace helper (@getpaseo/workspace-helper, not in this
// repository): a JavaScript program, run the way the runtime runs the real one (the embedded
// engine, env {BUN_BE_BUN: "1"}), answering the three calls a click makes with one JSON line:
//   stat <path>  → {"kind", "size", "mtimeMs"}     read <path> → {"text"}     list <path> → {"entries"}
// Paths are relative to its cwd, the workspace root.
import { readFileSync, readdirSync, statSync } from "node:fs";

const [op, path = "."] = process.argv.slice(2);
let answer;
if (op === "stat") {
  const s = statSync(path);
  answer = { kind: s.isDirectory() ? "directory" : "file", size: s.size, mtimeMs: s.mtimeMs };
} else if (op === "read") answer = { text: readFileSync(path, "utf8") };
else if (op === "list") answer = { entries: readdirSync(path, { withFileTypes: true }).map((e) => ({ name: e.name, directory: e.isDirectory() })) };
else {
  process.stderr.write(`helper stand-in: unknown call ${JSON.stringify(op)}\n`);
  process.exit(2);
}
process.stdout.write(`${JSON.stringify(answer)}\n`);
