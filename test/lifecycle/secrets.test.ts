/**
 * An attack on issue 24's "secrets never in argv, logs, the store or error messages":
 * a token in an exec's env (its value and a pasted `NAME=value` name), in lifecycleEnvironment,
 * and in an env value that fails validation, with the log at debug. Nothing an operator or the
 * daemon can read afterwards shows any of them: stderr, the runtime log, the store's files,
 * `ls`, `ps`, `logs`, `doctor`, and the wrapper's argv as `ps` of the host sees it. (`inspect`
 * answers the daemon the lifecycleEnvironment it configured: the protocol's, not a leak.)
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { startExec } from "../support/daemon.ts";
import { createInput, ok, op } from "../support/operation.ts";

const SECRETS = ["ghp_EnvValueSecret1", "ghp_LifecycleSecret2", "ghp_PastedNameSecret3", "ghp_BadValueSecret4", "ghp_BadNameSecret5"];

let t: Lab;
beforeEach(() => (t = lab("phr-secrets-")));
afterEach(() => t.cleanup());

/** Every file under `dir`, as text. */
function everyFile(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), "latin1"))
    .join("\n");
}

test("tokens in env and lifecycleEnvironment appear nowhere but the workload's own environment", async () => {
  const dir = join(t.dir, "project");
  mkdirSync(dir);
  const options = { ...t.options, logLevel: "debug", lifecycleEnvironment: { DEPLOY_TOKEN: SECRETS[1] } };
  ok(await op("create", "w1", { input: createInput("w1", { kind: "host-directory", path: dir }), options }));
  const seen: string[] = [];
  const handle = startExec("w1", envelope(["/bin/sh", "-c", 'printf "%s" "$API_TOKEN" | wc -c; sleep 30'], { options, env: { PATH, API_TOKEN: SECRETS[0], [`X=${SECRETS[2]}`]: "v" } }));
  handle.closeStdin();
  await handle.waitEvent("started");
  for (const args of [["ls"], ["ls", "--json"], ["ps"], ["ps", "--json"], ["logs"], ["logs", "--json"], ["doctor", "--json"]]) seen.push((await runBinary([...args, "--home", t.home])).stdout);
  seen.push(readFileSync(`/proc/${handle.pid}/cmdline`, "latin1"));
  // An env value that is not a string, beside a token, and under a pasted `NAME=token` name: refused, no token quoted.
  const refused = startExec("w1", envelope(["true"], { options, env: { PATH, GOOD: SECRETS[3], [`Y=${SECRETS[4]}`]: 5 } }));
  refused.closeStdin();
  const result = await refused.done;
  expect(result.code).not.toBe(0);
  seen.push(result.stderr, JSON.stringify(result.events));
  process.kill(handle.pid, "SIGTERM");
  const done = await handle.done;
  seen.push(done.stderr, JSON.stringify(done.events));
  seen.push(everyFile(t.home));
  const all = seen.join("\n");
  for (const secret of SECRETS) expect(all).not.toContain(secret);
});
