/**
 * At the prompt, every refusal ends in a step that works: a protocol operation typed like an
 * operator command names the operator command, a command without `--` is shown with it, a
 * mistyped command gets the nearest one, `new` speaks of its flags (not the request's field
 * paths), git's refusal of another user's repository gets the project's advice instead of
 * `safe.directory`, ssh's CR LF does not show as `\x0d`, help says the remote paragraph once, and
 * doctor's containment warning keeps its fix on a line of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { printableLines, printableStream } from "../../src/printable.ts";
import { runBinary } from "../../kit/binary.ts";
import { freePort } from "../../kit/ports.ts";
import { tempDir } from "../../kit/scratch.ts";
import { oneCommitRepo } from "../support/git.ts";
import { withoutRoot } from "../support/platform.ts";
import { missingTools } from "../support/tools.ts";

let sandbox: ReturnType<typeof tempDir>;
let env: Record<string, string>;
let home: string;
beforeAll(() => {
  sandbox = tempDir("phr-prompt-");
  mkdirSync(join(sandbox.path, "user"));
  home = join(sandbox.path, "runtime-home");
  env = { HOME: join(sandbox.path, "user"), PASEO_HOST_RUNTIME_HOME: home, PASEO_HOME: join(sandbox.path, "paseo"), PATH: process.env.PATH ?? "/usr/bin:/bin" };
});
afterAll(() => sandbox.cleanup());

/** The first line of a usage error (the usage follows it). */
async function refusal(args: string[]): Promise<{ code: number | null; first: string }> {
  const result = await runBinary(args, { env });
  expect(result.stdout).toBe("");
  return { code: result.code, first: result.stderr.split("\n")[0]! };
}

describe("a usage error names the step that works", () => {
  test("a protocol operation typed as an operator would (pause -w c1) names the operator command, with the id given", async () => {
    expect(await refusal(["pause", "-w", "c1"])).toEqual({
      code: 2,
      first: `paseo-host-runtime: unexpected argument "-w". pause is an operation of the daemon's protocol, not a command for people; by hand: paseo-host-runtime workspace pause -w c1`,
    });
    expect((await refusal(["destroy", "-w"])).first).toEndWith("by hand: paseo-host-runtime rm -w W");
    // The daemon never sends a one-letter flag: its own usage errors stay exactly as they were.
    expect((await refusal(["destroy", "--workspace-id"])).first).toBe("paseo-host-runtime: --workspace-id needs a value");
    expect((await refusal(["exec", "-w", "it's"])).first).toEndWith(`by hand: paseo-host-runtime run -w 'it'\\''s' -- COMMAND...`);
  });

  test("run without -- shows the same line with it", async () => {
    expect(await refusal(["run", "-w", "c1", "ls", "-la"])).toEqual({
      code: 2,
      first: `paseo-host-runtime: unexpected argument "ls": run takes the command to run after --, as in: paseo-host-runtime run -w c1 -- ls -la`,
    });
  });

  test("a mistyped command or subcommand: did you mean the nearest; none when nothing is near", async () => {
    expect(await refusal(["lss"])).toEqual({ code: 2, first: `paseo-host-runtime: unknown command "lss"; did you mean "ls"?` });
    expect((await refusal(["doctr"])).first).toBe(`paseo-host-runtime: unknown command "doctr"; did you mean "doctor"?`);
    expect((await refusal(["workspace", "pase", "-w", "c1"])).first).toEndWith(`one of pause, resume, inspect, reconcile; did you mean "workspace pause"?`);
    expect((await refusal(["frobnicate"])).first).toBe(`paseo-host-runtime: unknown command "frobnicate"`);
  });

  test("new and run --help say what a remote runtime changes once, in one paragraph", async () => {
    for (const command of ["new", "run", "rm", "ls", "doctor"]) {
      const help = (await runBinary([command, "--help"], { env })).stdout;
      // Before, a general paragraph ("With a --remote runtime …") and the command's own ("A remote runtime: …").
      expect(help.match(/^(With a --remote runtime|A remote runtime)/gm)).toHaveLength(1);
    }
  });
});

describe("new speaks of its flags", () => {
  test("--source that does not exist: named as --source, not input.project.source.path; nothing made", async () => {
    const result = await runBinary(["new", "-w", "x", "--source", join(sandbox.path, "missing"), "--home", home], { env });
    expect(result.code).toBe(1);
    expect(result.stderr).toStartWith(`paseo-host-runtime: --source ${join(sandbox.path, "missing")} cannot be used: ENOENT`);
    expect(result.stderr).not.toContain("input.");
  });

  test("--cwd that leaves the workspace: named as --cwd", async () => {
    const source = join(sandbox.path, "src");
    mkdirSync(source);
    const result = await runBinary(["new", "-w", "x", "--source", source, "--cwd", "../..", "--home", home], { env });
    expect(result.code).toBe(1);
    expect(result.stderr).toStartWith("paseo-host-runtime: --cwd must stay inside the workspace");
  });

  // Only root can give a repository to another user here.
  test.skipIf(withoutRoot("prompt.test.ts, a repository of another user", "only root can chown a repository to another user"))(
    "a repository of another user: git's refusal with the project's advice, never git's safe.directory line",
    async () => {
      const repo = oneCommitRepo(join(sandbox.path, "theirs"));
      chmodSync(sandbox.path, 0o755);
      for (const path of Bun.spawnSync(["find", repo]).stdout.toString().trim().split("\n")) chownSync(path, 65534, 65534);
      const result = await runBinary(["new", "-w", "theirs", "--source", repo, "--branch", "b", "--base", "main", "--home", home], { env });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`fatal: detected dubious ownership in repository at '${repo}' | the repository belongs to another user than the one running the runtime (uid 0): run the daemon as the repository's owner, or give it a repository of its own (docs/operators.md "A daemon that does not run as root"; safe.directory only for an owner you trust as much as this user)\n`);
      expect(result.stderr).not.toContain("git config --global --add safe.directory");
    },
  );
});

describe("ssh's messages", () => {
  test("a line ending in CR LF is one line: no \\x0d, also when the CR and the LF come in two chunks", () => {
    expect(printableLines("ssh: connect to host 127.0.0.1 port 1: Connection refused\r\n")).toBe("ssh: connect to host 127.0.0.1 port 1: Connection refused\n");
    expect(printableLines("a\rb\n")).toBe("a\\x0db\n");
    const shown = printableStream();
    expect(shown(new TextEncoder().encode("refused\r")) + shown(new TextEncoder().encode("\nnext\n"))).toBe("refused\nnext\n");
  });

  test.skipIf(missingTools("prompt.test.ts, ssh's own message", ["ssh"]).length > 0)("through --remote to a port nothing listens on (127.0.0.1): ssh's reason without \\x0d", async () => {
    const port = await freePort();
    const result = await runBinary(["--remote", `ssh://nobody@127.0.0.1:${port}/x`, "inspect", "--workspace-id", "w"], { env, stdin: `{"protocolVersion":1,"options":{"stateDirectory":"${home}"}}\n` });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`port ${port}: Connection refused\n`);
    expect(result.stderr).not.toContain("\\x0d");
  });
});

describe("doctor's containment warning", () => {
  test("the finding on its line, short; how to fix it on the fix line, once", async () => {
    const result = await runBinary(["doctor", "--home", home, "--options-json", JSON.stringify({ cgroupRoot: join(sandbox.path, "no-cgroup") }), "--json"], { env });
    const check = (JSON.parse(result.stdout) as { checks: { name: string; status: string; detail: string; hint?: string }[] }).checks.find((c) => c.name === "containment")!;
    expect(check.status).toBe("warn");
    expect(check.detail).toBe(`process groups: options.cgroupRoot ${join(sandbox.path, "no-cgroup")} is not a cgroup directory; a workload that leaves its session (setsid, a daemon) escapes cleanup, isolation "sandbox" would close that: its pid namespace ends with the sandbox`);
    expect(check.hint).toStartWith("# for a cgroup per execution: point options.cgroupRoot at a delegated directory");
  });
});
