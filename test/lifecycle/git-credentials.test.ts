/**
 * A credential in a git URL (`http://user:token@host/…`) reaches git through the environment of
 * the git processes that need it, and nowhere else: not stderr, the store, the runtime log, the
 * clone's .git/config or reflog, the operator's credential store, or any process's argv.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Database, constants } from "bun:sqlite";
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { httpGitServer, redirectingServer, type SeenRequest } from "../support/git-servers.ts";
import { createInput, ok, op } from "../support/operation.ts";
import { git, makeRepo } from "../support/git.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { processesWith } from "../support/procs.ts";
import { ownedEntries, record, records, SCHEMA_V1, storePath } from "../support/store.ts";
import { linuxOnly } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc/<pid>/cmdline). */
const PROC = linuxOnly("lifecycle/git-credentials.test.ts, every git argv read from /proc while it serves", "/proc/<pid>/cmdline");

const USER = "alice";
const TOKEN = "tok3n-s3cr3t-9f8e7d";

let t: Lab;
let repo: string;
let served: string;
let server: ReturnType<typeof httpGitServer>;
/** Command lines of every process that mentioned the token or the server while git waited for it. */
let argvWithToken: string[];
let argvOfClients: string[];
/** The operator's own git setup: a HOME and global config with credential helpers that store. */
let operatorHome: string;
let operatorEnv: Record<string, string>;

beforeEach(() => {
  t = lab("phr-cred-");
  repo = makeRepo(join(t.dir, "repo"));
  served = join(t.dir, "served");
  mkdirSync(served);
  git(served, "clone", "-q", "--bare", repo, join(served, "repo.git"));
  argvWithToken = [];
  argvOfClients = [];
  server = httpGitServer(served, { user: USER, password: TOKEN }, () => {
    argvWithToken.push(...processesWith(TOKEN).map(cmdline));
    argvOfClients.push(...processesWith(`127.0.0.1:${server.port}`).map(cmdline));
  });
  operatorHome = join(t.dir, "operator");
  mkdirSync(operatorHome);
  writeFileSync(
    join(operatorHome, "gitconfig"),
    `[credential]\n\thelper = store\n[credential "http://127.0.0.1:${server.port}"]\n\thelper = store --file ${join(operatorHome, "scoped-credentials")}\n`,
  );
  operatorEnv = { HOME: operatorHome, GIT_CONFIG_GLOBAL: join(operatorHome, "gitconfig") };
});
afterEach(() => {
  server.stop();
  t.cleanup();
});

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

function urlWith(userinfo: string): string {
  return `http://${userinfo}127.0.0.1:${server.port}/repo.git`;
}

const options = () => ({ ...t.options, allowedGitProtocols: ["https", "http"] });

async function createAs(input: { workspaceId: string }, env: Record<string, string> = operatorEnv) {
  return await op("create", input.workspaceId, { input, options: options() }, env);
}

/** Every file under `dir` whose bytes contain `needle` (the served repository excluded). */
function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isDirectory()) {
      if (path !== served) for (const name of readdirSync(path)) walk(join(path, name));
    } else if (stat.isFile() && readFileSync(path).includes(needle)) {
      found.push(path);
    }
  };
  walk(dir);
  return found;
}

function authorizations(seen: SeenRequest[]): (string | null)[] {
  return [...new Set(seen.map((request) => request.authorization))];
}

test.skipIf(PROC)("a credential URL clones, and the token shows nowhere: stderr, store, log, .git/config, argv, the operator's helpers", async () => {
  const input = createInput("w1", { kind: "git", url: urlWith(`${USER}:${TOKEN}@`), revision: "feature" });
  const created = await createAs(input);
  expect(created.code, created.stderr).toBe(0);
  const checkout: string = created.json.placement.cwd;
  expect(readFileSync(join(checkout, "feature.txt"), "utf8")).toBe("feature\n");
  // git got the credential (the server checked it) ...
  expect(authorizations(server.seen)).toContain(`Basic ${Buffer.from(`${USER}:${TOKEN}`).toString("base64")}`);
  // ... but never in any process's argv, while git and its helpers ran.
  expect(argvOfClients.some((argv) => argv.includes("git"))).toBe(true);
  expect(argvWithToken).toEqual([]);
  expect(created.stderr).not.toContain(TOKEN);
  // origin is the URL without userinfo; nothing of the home, the clone or the operator's HOME holds the token.
  expect(git(checkout, "remote", "get-url", "origin")).toBe(urlWith(""));
  expect(filesContaining(t.dir, TOKEN)).toEqual([]);
  expect(existsSync(join(operatorHome, "scoped-credentials"))).toBe(false);
  expect(existsSync(join(operatorHome, ".git-credentials"))).toBe(false);
  expect((record(t.home, "w1")!.input as any).project.source.url).toBe(urlWith(""));

  // The same input again is the same workspace; another token is a conflict that shows neither.
  expect((await createAs(input)).stdout).toBe(created.stdout);
  const other = await createAs(createInput("w1", { kind: "git", url: urlWith(`${USER}:other-t0ken@`), revision: "feature" }));
  expect(other.code).toBe(1);
  expect(other.stderr).toContain("already exists with a different create input: a URL in the input carries other credentials than when the workspace was created");
  expect(other.stderr).not.toContain(TOKEN);
  expect(other.stderr).not.toContain("other-t0ken");
  const plain = await createAs(createInput("w1", { kind: "git", url: urlWith(""), revision: "feature" }));
  expect(plain.code).toBe(1);
  ok(await op("destroy", "w1", { options: options() }));
  expect(filesContaining(t.dir, TOKEN)).toEqual([]);
});

test.skipIf(PROC)("a change-request fetch in the clone authenticates with the same credential", async () => {
  const placement = { kind: "resolved-worktree", worktreeSlug: "pr", source: { kind: "checkout-github-pr", headRef: "feature", baseRefName: "main", localBranchName: "pr-7" } };
  const created = await createAs(createInput("w1", { kind: "git", url: urlWith(`${USER}:${TOKEN}@`), revision: "" }, placement));
  expect(created.code, created.stderr).toBe(0);
  expect(git(created.json.placement.cwd, "rev-parse", "--abbrev-ref", "HEAD")).toBe("pr-7");
  expect(filesContaining(t.dir, TOKEN)).toEqual([]);
});

test.skipIf(PROC)("a wrong token fails without a prompt: no askpass runs, the reason names the URL without the token, nothing is kept", async () => {
  const asked = join(t.dir, "askpass-ran");
  const askpass = join(t.dir, "askpass");
  writeFileSync(askpass, `#!/bin/sh\necho "$@" >> ${asked}\necho guessed\n`);
  chmodSync(askpass, 0o755);
  const env = { ...operatorEnv, GIT_ASKPASS: askpass, SSH_ASKPASS: askpass };
  for (const userinfo of [`${USER}:wrong-${TOKEN}@`, ""]) {
    const result = await createAs(createInput("w1", { kind: "git", url: urlWith(userinfo), revision: "" }), env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(urlWith(""));
    expect(result.stderr).not.toContain(TOKEN);
  }
  expect(existsSync(asked)).toBe(false);
  expect(records(t.home)).toEqual([]);
  expect(ownedEntries(t.home)).toEqual([]);
  expect(filesContaining(t.dir, TOKEN)).toEqual([]);
});

test.skipIf(PROC)("a redirect to another host never receives the token", async () => {
  // The URL names the redirector; the real server (another host:port) asks for credentials.
  const redirector = redirectingServer(`http://127.0.0.1:${server.port}`);
  try {
    const url = `http://${USER}:${TOKEN}@127.0.0.1:${redirector.port}/repo.git`;
    const result = await createAs(createInput("w1", { kind: "git", url, revision: "" }));
    expect(result.code).toBe(1);
    expect(result.stderr).not.toContain(TOKEN);
    expect(server.seen.length).toBeGreaterThan(0);
    expect(authorizations(server.seen)).toEqual([null]);
    expect(authorizations(redirector.seen)).toEqual([null]);
    expect(records(t.home)).toEqual([]);
  } finally {
    redirector.stop();
  }
});

test.skipIf(PROC)("credentials git cannot use safely are refused before anything is written, without echoing them", async () => {
  const cases: [string, string][] = [
    [`http://${USER}:${TOKEN}@evil@127.0.0.1/repo.git`, 'has more than one "@" before its host'],
    [`git://${USER}:${TOKEN}@127.0.0.1/repo.git`, "carries credentials in a git URL"],
    [`ssh://${USER}:${TOKEN}@127.0.0.1/repo.git`, "carries a password in an ssh URL"],
    [`http://${USER}:${TOKEN}%0a@127.0.0.1/repo.git`, "has a NUL or line break in its credentials"],
    [`http://${USER}:${TOKEN}%zz@127.0.0.1/repo.git`, "has a malformed %-escape in its credentials"],
  ];
  for (const [url, message] of cases) {
    const result = await op("create", "w1", { input: createInput("w1", { kind: "git", url, revision: "" }), options: { ...options(), allowedGitProtocols: ["http", "git", "ssh"] } });
    expect(result.code, url).toBe(1);
    expect(result.stderr, url).toContain(message);
    expect(result.stderr, url).not.toContain(TOKEN);
  }
  expect(existsSync(t.home)).toBe(false);
});

test.skipIf(PROC)("a refused URL with a token in its query is named without the query", async () => {
  const url = `https://127.0.0.1/repo.git?access_token=${TOKEN}`;
  const result = await op("create", "w1", { input: createInput("w1", { kind: "git", url, revision: "" }), options: { ...options(), allowedGitProtocols: ["file"] } });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain('"https://127.0.0.1/repo.git?***" uses the git transport "https"');
  expect(result.stderr).not.toContain(TOKEN);
  expect(existsSync(t.home)).toBe(false);
});

/** The version 1 schema, exactly as 0.1.0 created it. */

test.skipIf(PROC)("a version 1 home that stored a credential URL is migrated: the token leaves the store, the workspace stays the same workspace", async () => {
  // What 0.1.0 left behind: a ready clone whose row holds the URL verbatim.
  const input = createInput("old", { kind: "git", url: urlWith(`${USER}:${TOKEN}@`), revision: "" });
  const root = join(t.home, "workspaces", "old-root");
  mkdirSync(root, { recursive: true, mode: 0o700 });
  chmodSync(t.home, 0o700);
  // Opened as 0.1.0 opens it: WAL kept between processes, so old frames stay in the -wal file.
  const db = new Database(storePath(t.home), { create: true });
  db.run("PRAGMA journal_mode = WAL");
  db.fileControl(constants.SQLITE_FCNTL_PERSIST_WAL, 1);
  db.run(SCHEMA_V1);
  db.run("INSERT INTO meta (key, value) VALUES ('schema_version', '1')");
  db.run(
    `INSERT INTO workspaces (workspace_id, owner, status, input_json, host_directory, kind, root, details_json, created_at, updated_at)
     VALUES ('old', 'default', 'ready', ?, 'adopt', 'adopted', ?, '{"branch":"main"}', 1, 1)`,
    [JSON.stringify(input), root],
  );
  for (let i = 2; i < 8; i++) db.run("UPDATE workspaces SET updated_at = ?", [i]);
  db.close();
  expect(filesContaining(t.home, TOKEN).sort()).toEqual([storePath(t.home), join(t.home, "state.sqlite-wal")]);

  expect(ok(await op("inspect", "old", { options: options() })).inspection.status).toBe("ready");
  expect(filesContaining(t.home, TOKEN)).toEqual([]);
  const migrated = record(t.home, "old")!;
  expect((migrated.input as any).project.source.url).toBe(urlWith(""));
  expect(migrated.inputDigest).toMatch(/^[0-9a-f]{64}$/);
  expect(statMode(join(t.home, "input.key"))).toBe(0o600);
  // The create that made it, sent again, is still recognised as the same input.
  const again = await createAs(input);
  expect(again.code, again.stderr).toBe(0);
  expect(again.json.placement.cwd).toBe(root);
  const other = await createAs(createInput("old", { kind: "git", url: urlWith(`${USER}:rotated@`), revision: "" }));
  expect(other.stderr).toContain("carries other credentials");
});

function statMode(path: string): number {
  return lstatSync(path).mode & 0o777;
}
