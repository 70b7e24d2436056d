/**
 * The docs cannot rot: the README stays an operator's page (at most 250 lines, with the quick
 * start CI runs), every relative link of the docs reaches a file and heading that exist, and
 * every example of docs/protocol.md is run against the compiled binary the way the daemon runs
 * it, its answers compared byte for byte.
 *
 * An example is a fenced block whose info string names it: ```json example:seed/create/stdin.
 * The docs' paths (the runtime home, the user's repository) are swapped for this test's own
 * directories on the way in and back again on the way out.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { Control, LifecycleRequest, dialectOf, encodeFrame, parseMessage, type ProcessEvent } from "../../src/protocol/index.ts";
import { BIN, runBinary } from "../../kit/binary.ts";
import { SCHEMA_VERSION } from "../../src/store/db.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { makeRepo } from "../support/git.ts";
import { storePath } from "../support/store.ts";

const ROOT = join(import.meta.dir, "..", "..");
const README_MAX_LINES = 250;

/** The paths the examples are written with, and what the test puts in their place. */
const DOC_HOME = "/var/lib/paseo-host-runtime";
const DOC_REPO = "/home/alice/src/project";

/** Every markdown file whose links are checked: the README, CONTRIBUTING and everything under docs/. */
function markdownFiles(): string[] {
  const docs = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      return entry.isDirectory() ? docs(path) : entry.name.endsWith(".md") ? [path] : [];
    });
  return [join(ROOT, "README.md"), join(ROOT, "CONTRIBUTING.md"), ...docs(join(ROOT, "docs"))];
}

/** Markdown text without its fenced code blocks (a `#` line or a link inside one is neither). */
function withoutFences(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
}

/** Markdown text without any code, fenced or inline (links inside code are not links). */
function withoutCode(text: string): string {
  return withoutFences(text).replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors a markdown file's headings make (a repeated heading gets -1, -2, … as on GitHub). */
function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of withoutFences(readFileSync(path, "utf8")).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = anchorOf(match[1]!);
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

/** Every relative link of a markdown file that does not lead to a file or heading. */
export function brokenLinks(path: string): string[] {
  const broken: string[] = [];
  for (const match of withoutCode(readFileSync(path, "utf8")).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [file, anchor] = target.split("#", 2) as [string, string | undefined];
    const full = file === "" ? path : resolve(dirname(path), file);
    if (!existsSync(full)) broken.push(`${target} (no file ${relative(ROOT, full)})`);
    else if (anchor !== undefined && full.endsWith(".md") && !anchorsOf(full).has(anchor)) broken.push(`${target} (no heading #${anchor} in ${relative(ROOT, full)})`);
    else if (anchor !== undefined && !full.endsWith(".md") && statSync(full).isDirectory()) broken.push(`${target} (an anchor into a directory)`);
  }
  return broken;
}

/** The example blocks of a markdown text, by name (`seed/create/stdin` → its text, without the last newline). */
export function examplesOf(text: string): Map<string, string> {
  const examples = new Map<string, string>();
  for (const match of text.matchAll(/^```\w* example:(\S+)\n([\s\S]*?)^```$/gm)) {
    const [, name, body] = match as unknown as [string, string, string];
    if (examples.has(name)) throw new Error(`example ${name} appears twice`);
    examples.set(name, body.replace(/\n$/, ""));
  }
  return examples;
}

describe("the README is the operator's page", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");

  test(`README.md has at most ${README_MAX_LINES} lines`, () => {
    expect(readme.split("\n").length - (readme.endsWith("\n") ? 1 : 0)).toBeLessThanOrEqual(README_MAX_LINES);
  });

  test("it keeps the quick start from source: the demo and the test command CI runs", () => {
    expect(readme).toContain("npm install && npm run demo");
    expect(readme).toMatch(/^npm test$/m);
  });
});

/**
 * What the docs quote of the binary's output is in fenced blocks named ```text output:NAME; each
 * line of one is a line the binary prints in scenario NAME, where `…` stands for any text and
 * the docs' paths and uid are this test's. A doctor-like line outside such a block fails: a
 * quote must be one this test checks.
 */
describe("every output the docs quote is the binary's", () => {
  const files = markdownFiles();
  const blocks = files.flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/^ *```text output:(\S+)\n([\s\S]*?)^ *```$/gm)].map((match) => ({ file: relative(ROOT, file), name: match[1]!, lines: match[2]!.split("\n").map((line) => line.trim()).filter(Boolean) })),
  );
  let box: Lab;
  beforeAll(() => {
    box = lab("phr-docs-output-");
    mkdirSync(box.home, { mode: 0o700 });
  });
  afterAll(() => box?.cleanup());

  const env = () => ({ HOME: box.dir, LC_ALL: "C.UTF-8", PASEO_DAEMON_INSTALL: join(box.dir, "no-paseo") });
  /** Each scenario: the binary's output (stdout and stderr lines) the docs quote from. */
  const SCENARIOS: Record<string, () => Promise<string>> = {
    // A host without git (PATH names nothing) and without a helper.
    doctor: async () => (await runBinary(["doctor", "--home", box.home], { env: { ...env(), PATH: "/nonexistent" } })).stdout,
    "doctor-database": async () => {
      mkdirSync(join(box.dir, "project"), { recursive: true });
      expect((await runBinary(["new", "-w", "w", "--source", join(box.dir, "project"), "--home", box.home], { env: env() })).code).toBe(0);
      return (await runBinary(["doctor", "--home", box.home], { env: env() })).stdout;
    },
    downgrade: async () => {
      const db = new Database(storePath(box.home));
      db.run("UPDATE meta SET value = ? WHERE key = 'schema_version'", [String(SCHEMA_VERSION + 1)]);
      db.close();
      return (await runBinary(["ls", "--home", box.home], { env: env() })).stderr;
    },
  };
  /** A doc line as a pattern: the docs' home, uid and install directory are this test's; `…` is any text. */
  const pattern = (line: string) =>
    new RegExp(
      `^${line
        .replaceAll(DOC_HOME, box.home)
        .replace("uid 1000", `uid ${process.getuid?.()}`)
        .replace("--dir /usr/local/bin", `--dir ${dirname(BIN)}`)
        .split("…")
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
        .join(".*")}$`,
    );

  test("every scenario is quoted somewhere, and every quote names one", () => {
    expect([...new Set(blocks.map((block) => block.name))].sort()).toEqual(Object.keys(SCENARIOS).sort());
  });

  // In this order: the database scenario makes the workspace the downgrade scenario's home holds.
  for (const name of Object.keys(SCENARIOS)) {
    test(`output:${name}`, async () => {
      const printed = (await SCENARIOS[name]!()).split("\n").map((line) => line.trim());
      for (const block of blocks.filter((b) => b.name === name)) {
        for (const line of block.lines) expect({ file: block.file, line, printed: printed.some((p) => pattern(line).test(p)) }).toEqual({ file: block.file, line, printed: true });
      }
    });
  }

  test("no doctor line is quoted outside an output block", () => {
    const unchecked = files.flatMap((file) =>
      readFileSync(file, "utf8")
        .replace(/^ *```text output:\S+\n[\s\S]*?^ *```$/gm, "")
        .split("\n")
        .filter((line) => /^ *[✓✗!·] \S+(?: \S+)* {2,}\S/.test(line))
        .map((line) => `${relative(ROOT, file)}: ${line}`),
    );
    expect(unchecked).toEqual([]);
  });
});

describe("every relative link of the docs leads somewhere", () => {
  for (const file of markdownFiles()) {
    test(relative(ROOT, file), () => {
      expect(brokenLinks(file)).toEqual([]);
    });
  }
});

const protocolDoc = readFileSync(join(ROOT, "docs", "protocol.md"), "utf8");
const examples = examplesOf(protocolDoc);

/** An example's text; a missing one fails the test that needs it. */
function example(name: string): string {
  const text = examples.get(name);
  if (text === undefined) throw new Error(`docs/protocol.md has no block marked example:${name}`);
  return text;
}

/** An example `argv` block: the binary's arguments (the first word is paseo-host-runtime). */
function argvOf(name: string): string[] {
  const words = example(name).trim().split(/\s+/);
  expect(words[0]).toBe("paseo-host-runtime");
  return words.slice(1);
}

/** A JSON-string block (`fd0`, `fd1`): the bytes it stands for. */
function bytesOf(name: string): string {
  return JSON.parse(example(name)) as string;
}

describe("the examples of docs/protocol.md, run against the binary", () => {
  let scratch: Lab;
  let home: string;
  let repo: string;
  /** Doc paths → this test's paths (on the way in). */
  let toHere: (text: string) => string;
  /** This test's paths → doc paths (on the way out). */
  let toDoc: (text: string) => string;

  beforeAll(() => {
    scratch = lab("phr-docs-");
    home = scratch.home;
    repo = makeRepo(join(scratch.dir, "repo"));
    toHere = (text) => text.replaceAll(DOC_HOME, home).replaceAll(DOC_REPO, repo);
    toDoc = (text) => text.replaceAll(home, DOC_HOME).replaceAll(repo, DOC_REPO);
  });
  afterAll(() => scratch?.cleanup());

  /**
   * The options as this test sends them: the example's, plus this test's private cgroup root
   * (so its executions stay out of the test run's own cgroup). Options never appear in answers.
   */
  function withTestOptions(message: Record<string, unknown>): Record<string, unknown> {
    const options = message.options as Record<string, unknown>;
    return { ...message, options: { ...options, ...(scratch.cgroupRoot ? { cgroupRoot: scratch.cgroupRoot } : {}) } };
  }

  test("every example block is one the test runs", () => {
    const known = ["describe/argv", "describe/stdout"];
    for (const dialect of ["seed", "later"]) {
      known.push(...["create/argv", "create/stdin", "create/stdout", "exec/argv", "exec/fd3", "exec/fd1", "exec/fd4"].map((n) => `${dialect}/${n}`));
    }
    known.push("later/exec/fd0");
    expect([...examples.keys()].sort()).toEqual(known.sort());
  });

  test("describe answers the documented bytes", async () => {
    const result = await runBinary(argvOf("describe/argv"));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${example("describe/stdout")}\n`);
  });

  for (const dialect of ["seed", "later"] as const) {
    describe(`the ${dialect} dialect`, () => {
      test("the create request is canonical bytes of that dialect, and create answers the documented response", async () => {
        const line = example(`${dialect}/create/stdin`);
        const request = parseMessage(LifecycleRequest, line, "lifecycle request");
        expect(dialectOf(request)).toBe(dialect);
        expect(encodeFrame(LifecycleRequest, request, "lifecycle request")).toBe(`${line}\n`);

        const sent = JSON.stringify(withTestOptions(JSON.parse(toHere(line))));
        const result = await runBinary(argvOf(`${dialect}/create/argv`), { stdin: `${sent}\n` });
        expect(result.code, result.stderr).toBe(0);
        expect(toDoc(result.stdout)).toBe(`${example(`${dialect}/create/stdout`)}\n`);
      });

      test("the spawn envelope (and its controls) are canonical, and exec gives the documented fd 1 bytes and fd 4 events", async () => {
        const [envelopeLine, ...controlLines] = example(`${dialect}/exec/fd3`).split("\n") as [string, ...string[]];
        for (const line of [envelopeLine, ...controlLines]) {
          const frame = parseMessage(Control, line, "fd 3 control");
          expect(encodeFrame(Control, frame, "fd 3 control")).toBe(`${line}\n`);
        }
        const envelope = JSON.parse(toHere(envelopeLine)) as Record<string, unknown>;
        expect(dialectOf(envelope)).toBe(dialect);
        const pty = (envelope.stdio as { kind: string }).kind === "pty";
        const args = argvOf(`${dialect}/exec/argv`);
        expect(args.slice(0, 2)).toEqual(["exec", "--workspace-id"]);

        const handle = startExec(args[2]!, withTestOptions(envelope), { keepControls: pty });
        if (pty) {
          // As the daemon: on exit, fd 0 and fd 3 are closed.
          void handle.waitEvent("exit").then(() => {
            handle.closeStdin();
            handle.closeControls();
          });
          await handle.waitEvent("started");
          for (const line of controlLines) {
            handle.sendControl(`${line}\n`);
            const control = JSON.parse(line) as { type: string; id?: number };
            if (control.type === "resize") await handle.waitEvent("resized", (e) => e.type === "resized" && e.id === control.id);
          }
        }
        if (examples.has(`${dialect}/exec/fd0`)) handle.write(toHere(bytesOf(`${dialect}/exec/fd0`)));
        if (!pty) handle.closeStdin();
        const result: ExecResult = await handle.done;

        expect(result.violation).toBeNull();
        expect(result.events.map((e: ProcessEvent) => JSON.stringify(e)).join("\n")).toBe(example(`${dialect}/exec/fd4`));
        expect(toDoc(result.stdout.toString())).toBe(bytesOf(`${dialect}/exec/fd1`));
        const exit = result.events.at(-1) as Extract<ProcessEvent, { type: "exit" }>;
        expect({ code: result.code, signal: result.signal }).toEqual({ code: exit.code, signal: exit.signal });
      });
    });
  }
});
