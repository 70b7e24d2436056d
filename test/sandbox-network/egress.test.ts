/**
 * One execution's way out as the exec wrapper holds it (src/sandbox/network/egress.ts), in a
 * process of its own (the runtime log is per process): the proxy, its log lines and its counts
 * file, written again from a timer while the workload runs.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { tempDir, type Scratch } from "../../kit/scratch.ts";
import { linuxOnly } from "../support/platform.ts";
import { runtimeLogPath } from "../support/store.ts";

/** The proxy is on a Unix socket on Linux only (macOS: a loopback TCP port); /dev/full is Linux's. */
const skip = linuxOnly("sandbox-network/egress.test.ts", "the proxy's Unix socket and /dev/full");
const SRC = resolve(import.meta.dir, "../../src");

let scratch: Scratch | undefined;
afterEach(() => scratch?.cleanup());

/** The wrapper's part: open the way out, make the counts file's rewrite fail (ENOSPC), have a request refused, wait for the line that says so, close. */
const SCRIPT = `
import { symlinkSync, existsSync, readFileSync } from "node:fs";
import net from "node:net";
import { attachLog } from "${SRC}/log/runtime-log.ts";
import { readOptions } from "${SRC}/options.ts";
import { egressStatsPath, planEgress } from "${SRC}/sandbox/network/egress-plan.ts";
import { openEgress } from "${SRC}/sandbox/network/egress.ts";
const [home, dir, log] = process.argv.slice(-3);
attachLog(readOptions({ stateDirectory: home }));
const plan = planEgress(dir, "t1", ["allowed.test"]);
const egress = await openEgress(plan);
// Every later write of the counts goes to /dev/full: ENOSPC, as on a full disk.
symlinkSync("/dev/full", egressStatsPath(dir, "t1") + ".tmp");
const answer = await new Promise((resolve) => {
  const socket = net.connect({ path: plan.socketPath });
  const chunks = [];
  socket.on("connect", () => socket.write("GET http://denied.test/ HTTP/1.1\\r\\n\\r\\n"));
  socket.on("data", (chunk) => chunks.push(chunk));
  socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1").split("\\r\\n")[0]));
});
console.log(answer);
for (let tries = 0; tries < 500 && !(existsSync(log) && readFileSync(log, "utf8").includes('"net-error"')); tries++) await Bun.sleep(20);
await egress.close();
console.log("closed");
`;

test.skipIf(skip)("a counts file that cannot be written while the workload runs (ENOSPC) is a net-error line, not the wrapper's end", async () => {
  scratch = tempDir("phr-egress-");
  const home = join(scratch.path, "home");
  // The log is written once its home exists (a first create makes it).
  mkdirSync(home, { mode: 0o700 });
  const dir = join(scratch.path, "storage");
  const script = join(scratch.path, "wrapper.ts");
  writeFileSync(script, SCRIPT);
  const run = Bun.spawn([process.execPath, script, home, dir, runtimeLogPath(home)], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  expect({ stdout, stderr, code }).toEqual({ stdout: "HTTP/1.1 403 Forbidden\nclosed\n", stderr: "", code: 0 });
  const lines = readFileSync(runtimeLogPath(home), "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  const errors = lines.filter((line) => line.event === "net-error");
  expect(errors).toHaveLength(1);
  expect(errors[0]!.message).toContain("ENOSPC");
  expect(lines.filter((line) => line.event === "net-denied").map((line) => line.host)).toEqual(["denied.test"]);
  // Nothing of the execution's way out is left in its storage.
  expect(existsSync(join(dir, "egress-t1.json"))).toBe(false);
  expect(existsSync(join(dir, "egress-t1.json.tmp"))).toBe(false);
});
