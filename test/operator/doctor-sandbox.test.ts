/**
 * doctor and the sandbox (issue 22): the containment line says what still escapes under the
 * containment in force and that the sandbox closes it; `doctor --config` with a helper the
 * runtime cannot see into (a wrapper script running a program from elsewhere) says which path
 * to add to sandboxReadOnly.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Check } from "../../src/operator/report.ts";
import { missingTools } from "../support/tools.ts";
import { BIN } from "../../kit/binary.ts";
import { runIn, sandbox, type Sandbox } from "../support/operator.ts";
import { withoutCgroups } from "../support/platform.ts";

let box: Sandbox;
beforeAll(() => {
  box = sandbox();
});
afterAll(() => box.cleanup());

async function checks(options: Record<string, unknown>): Promise<Check[]> {
  const result = await runIn(box, ["doctor", "--home", box.home, "--options-json", JSON.stringify(options), "--json"]);
  return (JSON.parse(result.stdout) as { checks: Check[] }).checks;
}

describe("the containment line says what still escapes", () => {
  test("process groups: a workload leaving its session escapes, and the sandbox would close it", async () => {
    const groups = (await checks({ containment: "process-group" })).find((check) => check.name === "containment")!;
    expect(groups.detail).toContain('a workload that leaves its session (setsid, a daemon) escapes cleanup, isolation "sandbox" would close that: its pid namespace ends with the sandbox');
  });

  test.skipIf(withoutCgroups("operator/doctor-sandbox.test.ts, the cgroup escape line"))("cgroups: a workload writing another cgroup.procs escapes, and the sandbox would close it", async () => {
    const cgroup = (await checks({ containment: "cgroup", ...(box.cgroupRoot ? { cgroupRoot: box.cgroupRoot } : {}) })).find((check) => check.name === "containment")!;
    expect(cgroup.detail).toContain('a workload can leave its cgroup by writing its pid into any cgroup.procs the daemon\'s user may write (the runtime\'s own), isolation "sandbox" would close that: no cgroup file system inside');
  });

  test.skipIf(missingTools("doctor's containment line under the sandbox", ["bwrap"]).length > 0)("with isolation sandbox configured, it says the sandbox closes it", async () => {
    const groups = (await checks({ containment: "process-group", isolation: "sandbox" })).find((check) => check.name === "containment")!;
    expect(groups.detail).toContain('escapes cleanup, closed by isolation "sandbox": the sandbox\'s pid namespace ends with it');
  });
});

describe.skipIf(missingTools("doctor --config with a wrapper-script helper", ["bwrap", "node"]).length > 0)("doctor --config: what a wrapper-script helper needs shown", () => {
  test("names the package directory the wrapper runs from, to add to sandboxReadOnly; added, describe passes", async () => {
    // An installed helper package outside everything the sandbox shows, run by a wrapper script.
    const pkg = join(box.dir, "opt", "paseo-helper");
    mkdirSync(join(pkg, "dist"), { recursive: true });
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "@getpaseo/workspace-helper", version: "0.0.0-test", type: "module" }));
    writeFileSync(join(pkg, "dist", "main.mjs"), 'console.log(JSON.stringify({ protocolVersion: 1, capabilities: ["files", "watch", "resolve-command"] }));\n');
    const wrapper = join(box.dir, "bin", "paseo-workspace-helper");
    mkdirSync(join(box.dir, "bin"));
    writeFileSync(wrapper, `#!/bin/sh\nexec ${Bun.which("node")} ${join(pkg, "dist", "main.mjs")} "$@"\n`);
    chmodSync(wrapper, 0o755);
    const config = (options: Record<string, unknown>) => {
      const path = join(box.dir, "config.json");
      writeFileSync(path, JSON.stringify({ version: 1, workspaceRuntimes: { host: { type: "command", command: [BIN], options: { stateDirectory: box.home, helperPath: wrapper, ...options } } } }));
      return path;
    };
    const doctor = async (options: Record<string, unknown>) => {
      const result = await runIn(box, ["doctor", "--config", config(options), "--json"]);
      return (JSON.parse(result.stdout) as { checks: Check[] }).checks.find((check) => check.name === "workspace helper")!;
    };
    const failed = await doctor({ isolation: "sandbox" });
    expect(failed.status).toBe("fail");
    expect(failed.hint).toContain(`# add ${JSON.stringify(pkg)} to "sandboxReadOnly" in the runtime's options`);
    const fixed = await doctor({ isolation: "sandbox", sandboxReadOnly: [pkg] });
    expect(fixed.status).toBe("ok");
  });
});
