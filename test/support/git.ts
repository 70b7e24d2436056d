/**
 * The test kit's git fixtures: one identity and isolation for every repository a test builds
 * (not for the runtime), and the repositories themselves.
 */
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { lab, type Lab } from "../../kit/scratch.ts";

/** Git identity and isolation for the repositories the tests build (not for the runtime). */
export const GIT_TEST_ENV = {
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.invalid",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};

/** Runs git for test setup; throws with its stderr on failure. */
export function git(cwd: string, ...args: string[]): string {
  const result = Bun.spawnSync({ cmd: ["git", ...args], cwd, env: { ...process.env, ...GIT_TEST_ENV }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${result.stderr.toString()}`);
  return result.stdout.toString().trim();
}

/** Writes files (creating directories) under `dir`. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

/**
 * A repository on `main` with README, app/index.txt and a second branch `feature` (one commit
 * ahead, adding feature.txt), plus a tag v1 on the first commit.
 */
export function makeRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "-q", "-b", "main");
  writeFiles(dir, { "README.md": "hello\n", "app/index.txt": "app\n", "app/nested/deep.txt": "deep\n" });
  git(dir, "add", ".");
  git(dir, "commit", "-q", "-m", "first");
  git(dir, "tag", "v1");
  git(dir, "checkout", "-q", "-b", "feature");
  writeFiles(dir, { "feature.txt": "feature\n" });
  git(dir, "add", ".");
  git(dir, "commit", "-q", "-m", "feature work");
  git(dir, "checkout", "-q", "main");
  return realpathSync(dir);
}

/** A bare copy of `repo` at `dir`, served as a file:// URL (with a GitHub-style pull ref). */
export function makeRemote(repo: string, dir: string): string {
  git(dirname(dir), "clone", "-q", "--bare", repo, dir);
  git(dir, "update-ref", "refs/pull/7/head", git(repo, "rev-parse", "feature"));
  return `file://${dir}`;
}

/** A repository with one commit on `main` (file `hello.txt`) at `dir`. */
export function oneCommitRepo(dir: string): string {
  mkdirSync(dir);
  git(dir, "init", "-q", "-b", "main");
  writeFiles(dir, { "hello.txt": "hello\n" });
  git(dir, "add", "hello.txt");
  git(dir, "commit", "-q", "-m", "first");
  return dir;
}

/** Worktree paths registered in `repo` (the main one first). */
export function worktrees(repo: string): string[] {
  return git(repo, "worktree", "list", "--porcelain")
    .split("\n")
    .filter((line) => line.startsWith("worktree "))
    .map((line) => line.slice("worktree ".length));
}

/** Local branches of `repo`. */
export function branches(repo: string): string[] {
  return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads").split("\n").filter(Boolean).sort();
}

/** A lab with a fresh repository (makeRepo) at `<dir>/repo`: where most lifecycle tests start. */
export function repoLab(prefix = "phr-life-"): { t: Lab; repo: string } {
  const t = lab(prefix);
  return { t, repo: makeRepo(join(t.dir, "repo")) };
}
