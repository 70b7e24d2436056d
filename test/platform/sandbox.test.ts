/**
 * The sandbox as a transformation of the launch (src/sandbox/launch.ts, bwrap.ts, seatbelt.ts): the order of bwrap's
 * mounts (a later one lies over an earlier one, so order is meaning), and the macOS profile,
 * which cannot be run here (see docs/design/sandbox.md): its text is all that can be checked.
 */
import { describe, expect, test } from "bun:test";
import { homedir } from "node:os";
import { bwrapArguments } from "../../src/sandbox/bwrap.ts";
import { filesToShow, type SandboxView } from "../../src/sandbox/view.ts";
import { sandboxLaunch } from "../../src/sandbox/launch.ts";
import { sandboxProfile, seatbeltLaunch } from "../../src/sandbox/seatbelt.ts";
import { SANDBOX_FDS } from "../../src/sandbox/init-protocol.ts";
import { linuxOnly } from "../support/platform.ts";

const view: SandboxView = {
  root: "/tmp/ws/project",
  readWrite: ["/repo/.git", "/srv/cache"],
  readOnly: ["/repo/.git/hooks", "/repo/.git/config", "/opt/tools"],
  network: "host",
};

/** The destinations of the mounts, in bwrap's order. */
function mountOrder(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (["--bind", "--ro-bind", "--bind-fd", "--symlink"].includes(args[i]!)) out.push(args[(i += 2)]!);
    else if (["--tmpfs", "--proc", "--dev"].includes(args[i]!)) out.push(args[++i]!);
  }
  return out;
}

describe("bwrap's arguments", () => {
  test("namespaces and process options come first; network none adds --unshare-net", () => {
    const args = bwrapArguments(view);
    expect(args.slice(0, 3)).toEqual(["--die-with-parent", "--unshare-pid", "--unshare-ipc"]);
    expect(args).toContain("--cap-drop");
    expect(args).not.toContain("--unshare-net");
    expect(bwrapArguments({ ...view, network: "none" })).toContain("--unshare-net");
  });

  test("the root comes from the checked descriptor, after the private /tmp it may lie in", () => {
    const args = bwrapArguments(view);
    const at = args.indexOf("--bind-fd");
    expect(args.slice(at, at + 3)).toEqual(["--bind-fd", String(SANDBOX_FDS.root), "/tmp/ws/project"]);
    const order = mountOrder(args);
    expect(order.indexOf("/tmp")).toBeLessThan(order.indexOf("/tmp/ws/project"));
    expect(args).not.toContain("--new-session");
  });

  test("deeper mounts lie over shallower ones: the common dir read-write, then its hooks and config read-only", () => {
    const args = bwrapArguments(view);
    const order = mountOrder(args);
    expect(order.indexOf("/repo/.git")).toBeLessThan(order.indexOf("/repo/.git/hooks"));
    expect(order.indexOf("/repo/.git")).toBeLessThan(order.indexOf("/repo/.git/config"));
    const hooks = args.indexOf("/repo/.git/hooks");
    expect(args[hooks - 1]).toBe("--ro-bind");
    expect(order.indexOf("/usr")).toBeLessThan(order.indexOf("/tmp/ws/project"));
  });

  test("the probe has no workspace to bind", () => {
    expect(bwrapArguments({ root: null, readWrite: [], readOnly: [], network: "host" })).not.toContain("--bind-fd");
  });

  test("files already visible are not bound again", () => {
    expect(filesToShow(["/usr/bin/git", "/tmp/ws/project/run.sh", "/opt/tools/x", "/home/u/bin/tool"], view)).toEqual(["/home/u/bin/tool"]);
  });

  test.skipIf(linuxOnly("platform/sandbox.test.ts, the bwrap launch", "bubblewrap"))("on Linux the launch becomes bwrap with the init's own env, the workload going over the control socket", () => {
    const init = { argv: ["/bin/runtime", "-e", "source", "init", "3"], env: { BUN_BE_BUN: "1" } };
    const launch = sandboxLaunch({ program: "/usr/bin/env", argv: ["env"], env: { SECRET: "x" } }, view, "/usr/bin/bwrap", init);
    expect(launch.program).toBe("/usr/bin/bwrap");
    expect(launch.env).toEqual({ BUN_BE_BUN: "1" });
    expect(launch.argv.slice(-6)).toEqual(["--", ...init.argv]);
    expect(launch.argv.join(" ")).not.toContain("SECRET");
  });
});

describe("the macOS profile (text only: not run here)", () => {
  const profile = sandboxProfile({ ...view, root: `${homedir()}/work/"quoted"` }, { program: "/usr/bin/true", argv: ["true"], env: {} });
  const lines = profile.split("\n");

  test("writes are denied, then allowed only in the workspace and the read-write paths (last match wins)", () => {
    const deny = lines.indexOf("(deny file-write*)");
    const allow = lines.findIndex((line) => line.startsWith("(allow file-write*"));
    expect(deny).toBeGreaterThan(0);
    expect(allow).toBeGreaterThan(deny);
    expect(lines[allow]).toContain(`(subpath "${homedir()}/work/\\"quoted\\"")`);
    expect(lines[allow]).toContain('(subpath "/srv/cache")');
    expect(lines[allow]).not.toContain("/opt/tools");
  });

  test("reads of the home are denied, then allowed for the workspace and what the launch needs", () => {
    const deny = lines.indexOf(`(deny file-read* (subpath "${homedir()}"))`);
    const allow = lines.findIndex((line) => line.startsWith("(allow file-read* "));
    expect(deny).toBeGreaterThan(0);
    expect(allow).toBeGreaterThan(deny);
    expect(lines[allow]).toContain("/opt/tools");
    expect(lines[allow]).toContain('(subpath "/usr/bin/true")');
    expect(profile).toContain(`(allow file-read-metadata (literal "${homedir()}/work")`);
  });

  test('network "none" denies the network', () => {
    expect(profile).not.toContain("(deny network*)");
    expect(sandboxProfile({ ...view, network: "none" }, { program: "/usr/bin/true", argv: ["true"], env: {} })).toContain("(deny network*)");
  });

  test("an allowlist denies the network, then allows one destination: the proxy's port on loopback (last match wins)", () => {
    const allowlist = { ...view, network: { allow: ["example.com"] } };
    const network = sandboxProfile(allowlist, { program: "/usr/bin/true", argv: ["true"], env: {} }, 41234)
      .split("\n")
      .filter((line) => line.includes("network"));
    expect(network).toEqual(["(deny network*)", '(allow network-outbound (remote ip "localhost:41234"))']);
    // Without the proxy's port there is no profile at all: never a wider one.
    expect(() => sandboxProfile(allowlist, { program: "/usr/bin/true", argv: ["true"], env: {} })).toThrow("the policy proxy's port");
  });

  test("sandbox-exec under an allowlist: the proxy variables name the proxy's loopback port, the rest of the env is the envelope's", () => {
    const launch = seatbeltLaunch({ program: "/usr/bin/true", argv: ["true"], env: { KEEP: "1" } }, { ...view, network: { allow: ["example.com"] } }, "/usr/bin/sandbox-exec", 41234);
    expect(launch.env.HTTPS_PROXY).toBe("http://127.0.0.1:41234");
    expect(launch.env.ALL_PROXY).toBe("socks5h://127.0.0.1:41234");
    expect(launch.env.KEEP).toBe("1");
    expect(launch.argv[2]).toContain('(remote ip "localhost:41234")');
  });
});
