/**
 * macOS's sandboxed launch as exec plans it (src/exec/sandboxed-launch.ts seatbeltPlan): pure
 * text, so it runs here. Under an allowlist the launch waits for the proxy's port; until then
 * the plan must hold a launch that exists (prepare builds it for every sandboxed exec) and
 * allows no network at all.
 */
import { describe, expect, test } from "bun:test";
import { seatbeltPlan } from "../../src/exec/sandboxed-launch.ts";
import type { SandboxEgress } from "../../src/exec/plan.ts";
import type { SandboxView } from "../../src/sandbox/view.ts";

const launch = { program: "/usr/bin/true", argv: ["true"], env: { KEEP: "1" } };
const view: SandboxView = { root: "/tmp/ws/project", readWrite: [], readOnly: [], network: { allow: ["example.com"] } };
const networkLines = (argv: string[]) => argv[2]!.split("\n").filter((line) => line.includes("network"));

describe("macOS: the sandboxed launch under a network allowlist", () => {
  test("is planned without the port: the plan's launch allows no network, the one made at the port allows only it", () => {
    const egress = { plan: {}, opened: null, launchAt: null } as unknown as SandboxEgress;
    const planned = seatbeltPlan(launch, view, "/usr/bin/sandbox-exec", egress);
    expect(networkLines(planned.argv)).toEqual(["(deny network*)"]);
    expect(planned.env).toEqual({ KEEP: "1" });
    const atPort = egress.launchAt!(41234);
    expect(networkLines(atPort.argv)).toEqual(["(deny network*)", '(allow network-outbound (remote ip "localhost:41234"))']);
    expect(atPort.env.HTTPS_PROXY).toBe("http://127.0.0.1:41234");
  });

  test("without an allowlist the launch is made at once and nothing waits", () => {
    const planned = seatbeltPlan(launch, { ...view, network: "none" }, "/usr/bin/sandbox-exec", null);
    expect(networkLines(planned.argv)).toEqual(["(deny network*)"]);
  });
});
