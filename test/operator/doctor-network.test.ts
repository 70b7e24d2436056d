/**
 * doctor proves the network allowlist end to end (issue 32): a real sandbox whose only way out
 * is the policy proxy, a program inside run by the binary's own engine. Its connections go only
 * to the check's own server on loopback: the proxy doctor runs resolves no name and dials
 * nothing else, so a policy that would admit the metadata address fails the check instead.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Check } from "../../src/operator/report.ts";
import { BIN } from "../../kit/binary.ts";
import { runIn, sandbox, type Sandbox } from "../support/operator.ts";
import { until } from "../support/poll.ts";
import { missingTools } from "../support/tools.ts";

const missing = missingTools("operator/doctor-network.test.ts, doctor's network proof", ["bwrap"]);

let box: Sandbox;
beforeAll(() => {
  box = sandbox();
});
afterAll(() => box.cleanup());

const NAMES = ["network allowed", "network refused", "network metadata", "network bypass"];

async function networkChecks(args: string[]): Promise<{ code: number | null; checks: Check[] }> {
  const result = await runIn(box, ["doctor", ...args, "--json"]);
  return { code: result.code, checks: (JSON.parse(result.stdout) as { checks: Check[] }).checks.filter((check) => check.name.startsWith("network")) };
}

describe.skipIf(missing.length > 0)("doctor proves the network policy with a real sandbox", () => {
  test("plain doctor says the three facts: allowed to its own loopback server, a host not listed refused, the metadata address refused before any connection", async () => {
    const result = await runIn(box, ["doctor", "--home", box.home]);
    const lines = result.stdout.split("\n").filter((line) => /^\S+ +network /.test(line));
    expect(lines.map((line) => line.replace(/^\S+ +/, "").split(/ {2,}/)[0])).toEqual(NAMES);
    expect(lines.every((line) => line.startsWith("✓") || line.startsWith("ok"))).toBe(true);
    expect(lines[0]).toMatch(/reached this check's server on 127\.0\.0\.1:\d+ through the proxy/);
    expect(lines[1]).toContain("paseo-doctor-refused.invalid, a host not listed, was refused by the proxy (HTTP 403: host paseo-doctor-refused.invalid is not on the allowlist)");
    expect(lines[2]).toContain("169.254.169.254 (cloud metadata), asked for by address with 0.0.0.0/0 allowed, was refused by the address check before any connection (169.254.169.254: link-local");
    expect(lines[3]).toContain("failed (ECONNREFUSED): the proxy is the only way out");
  });

  test("a configured allowlist naming the metadata address fails doctor, with the fix; nothing is dialled there", async () => {
    const { code, checks } = await networkChecks(["--home", box.home, "--options-json", JSON.stringify({ isolation: "sandbox", network: { allow: ["api.example.com", "169.254.169.254"] } })]);
    expect(code).toBe(1);
    const metadata = checks.find((check) => check.name === "network metadata")!;
    expect(metadata.status).toBe("fail");
    expect(metadata.detail).toBe("169.254.169.254 (cloud metadata) got HTTP 502; the policy admitted it (this check sends no packet there)");
    expect(metadata.hint).toContain("remove the allow entry that names 169.254.169.254");
    expect(checks.filter((check) => check.name !== "network metadata").map((check) => check.status)).toEqual(["ok", "ok", "ok"]);
  });

  test("doctor --config: the configured runtime's allowlist is the one checked (a wildcard too wide fails the refused line)", async () => {
    const config = join(box.dir, "config-network.json");
    writeFileSync(config, JSON.stringify({ version: 1, workspaceRuntimes: { host: { type: "command", command: [BIN], options: { stateDirectory: box.home, isolation: "sandbox", network: { allow: ["*.invalid"] } } } } }));
    const { code, checks } = await networkChecks(["--config", config]);
    expect(code).toBe(1);
    const refused = checks.find((check) => check.name === "network refused")!;
    expect(refused).toMatchObject({ status: "fail", detail: "paseo-doctor-refused.invalid, a host not listed, got HTTP 502" });
    expect(refused.hint).toContain("an allow entry matches paseo-doctor-refused.invalid");
  });
});

describe.skipIf(missing.length > 0)("a sandbox that fails in a way that is no refusal", () => {
  test("is not read as 'did not run': doctor fails with the error, and the bwrap it started is killed, not left running", async () => {
    const bin = join(box.dir, "garbling-bwrap-bin");
    const pidFile = join(box.dir, "garbling-bwrap.pid");
    mkdirSync(bin, { recursive: true });
    // Given a control socket on fd 3 (doctor's network check), it answers with a line that is no report and stays; the sandbox probe gets the real bwrap.
    writeFileSync(join(bin, "bwrap"), `#!/bin/sh\nif { true >&3; } 2>/dev/null; then\n  echo $$ > ${pidFile}\n  printf 'not a report\\n' >&3\n  exec sleep 60\nfi\nexec ${Bun.which("bwrap")} "$@"\n`, { mode: 0o755 });
    const result = await runIn(box, ["doctor", "--home", box.home], { env: { PATH: `${bin}:${process.env.PATH}` } });
    const pid = Number(readFileSync(pidFile, "utf8"));
    const alive = () => existsSync(`/proc/${pid}`) && readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep");
    try {
      expect(result.stdout).not.toContain("did not run");
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("JSON");
      await until("the misbehaving bwrap to be gone", () => !alive(), 2000);
    } finally {
      // Only the sleep this test's fake bwrap became, if the runtime left it.
      if (alive()) process.kill(pid, "SIGKILL");
    }
  });
});
