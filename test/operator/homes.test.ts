/**
 * `homes`: every home it can tell, and exit 1 when one could not be told (install.sh
 * --uninstall must not take the homes shown for all of them).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, runBinary } from "../../kit/binary.ts";
import { tempDir, type Scratch } from "../../kit/scratch.ts";

let scratch: Scratch;
let env: Record<string, string>;
let config: string;
let defaultHome: string;

beforeEach(() => {
  scratch = tempDir("phr-homes-");
  const home = join(scratch.path, "user");
  mkdirSync(join(home, ".paseo"), { recursive: true });
  config = join(home, ".paseo", "config.json");
  defaultHome = join(scratch.path, "state", "paseo-host-runtime");
  env = { HOME: home, XDG_STATE_HOME: join(scratch.path, "state"), PASEO_HOME: "", PASEO_HOST_RUNTIME_HOME: "" };
});

afterEach(() => scratch.cleanup());

/** One adopted workspace in the default home. */
async function adoptOne(): Promise<void> {
  const adopted = join(scratch.path, "adopted");
  mkdirSync(adopted);
  expect((await runBinary(["new", "-w", "a", "--source", adopted], { env })).code).toBe(0);
}

describe("homes", () => {
  test("a runtime whose options are refused: a note naming every problem, the default home still shown, exit 1", async () => {
    await adoptOne();
    writeFileSync(config, JSON.stringify({ workspaceRuntimes: { h: { type: "command", command: [BIN], options: { stateDirectory: "relative", logLevel: "loud" } } } }));
    const result = await runBinary(["homes", "--json"], { env });
    expect(result.code).toBe(1);
    const answer = JSON.parse(result.stdout) as { homes: { home: string; workspaces: { workspaceId: string }[] }[]; notes: string[] };
    expect(answer.homes.map(({ home, workspaces }) => [home, workspaces.map((w) => w.workspaceId)])).toEqual([[defaultHome, ["a"]]]);
    expect(answer.notes).toHaveLength(1);
    expect(answer.notes[0]).toStartWith(`runtime h of ${config}: its options are refused (options.stateDirectory `);
    expect(answer.notes[0]).toContain("; options.logLevel ");
    expect(result.stderr).toBe("paseo-host-runtime: homes: not every runtime home could be told (the notes above say why)\n");
  });

  test("a config.json that does not parse: a note, the default home still shown, exit 1", async () => {
    await adoptOne();
    writeFileSync(config, "{ not json");
    const result = await runBinary(["homes"], { env });
    expect(result.code).toBe(1);
    expect(result.stdout).toStartWith(`${defaultHome}: 1 workspace(s) (the default home)\n    a (owner default): adopts `);
    expect(result.stdout).toContain(`\nthe homes of the daemon's runtimes are not listed: ${config} is not valid JSON`);
  });

  test("every home told: exit 0", async () => {
    await adoptOne();
    const result = await runBinary(["homes", "--json"], { env });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).notes).toEqual([]);
    expect(result.stderr).toBe("");
  });
});
