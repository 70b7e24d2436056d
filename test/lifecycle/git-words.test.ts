/**
 * An attack on issue 24's "printable escaping of everything shown": what git says on a
 * successful run is forwarded to our stderr (a daemon's log, an operator's terminal). Its words
 * can be a git server's (`remote: …` sideband messages, which git 2.39 prints as sent): they
 * must arrive escaped, like every diagnostic of our own.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInput, ok, op } from "../support/operation.ts";
import { git, makeRemote, repoLab } from "../support/git.ts";
import type { Lab } from "../../kit/scratch.ts";

const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab("phr-git-words-")));
afterEach(() => t.cleanup());

test("a git server's words on a successful clone reach stderr escaped, on one line each", async () => {
  const url = makeRemote(repo, join(t.dir, "remote.git"));
  // The server's sideband as git prints it, stood in for by a git that adds it after a real clone.
  const bin = join(t.dir, "bin");
  mkdirSync(bin);
  const script = `#!/bin/sh\n${Bun.which("git")} "$@" || exit\n[ "$1" = clone ] && printf 'remote: hi\\033]0;owned\\007\\033[2J\\rpaseo-host-runtime: all fine\\n' >&2\nexit 0\n`;
  writeFileSync(join(bin, "git"), script);
  chmodSync(join(bin, "git"), 0o755);
  const input = createInput("w1", { kind: "git", url, revision: "" });
  const created = await op("create", "w1", { input, options: { ...t.options, allowedGitProtocols: ["file"] } }, { PATH: `${bin}:${process.env.PATH}` });
  ok(created);
  expect(created.stderr).toContain("remote: hi\\x1b]0;owned\\x07\\x1b[2J\\x0dpaseo-host-runtime: all fine");
  expect(created.stderr).not.toMatch(RAW_CONTROL);
});

test("a commit subject git prints on stdout (`HEAD is now at … <subject>`) reaches stderr escaped, stdout stays the response", async () => {
  writeFileSync(join(repo, "x.txt"), "x\n");
  git(repo, "add", "x.txt");
  git(repo, "commit", "-q", "-m", "fix\u001b]0;owned\u0007\u001b[2J");
  const input = createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" });
  const created = await op("create", "w1", { input, options: t.options });
  ok(created);
  expect(created.stderr).not.toMatch(RAW_CONTROL);
});
