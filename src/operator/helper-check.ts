/**
 * doctor's helper check: where `paseo-workspace-helper` comes from with the daemon's env `{}`,
 * and whether its `describe` works through this runtime exactly as the daemon runs it after a
 * create (exec, purpose workspace-helper, env `{}`, cwd the workspace root). The workspace is a
 * throwaway one: its own runtime home and directory in a temp dir, destroyed and removed after,
 * so doctor leaves nothing behind.
 */
import { NO_ACCESS, PATH_MISSING, tolerating } from "../platform/errno.ts";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { describeHelperResolution, HELPER_NAME, helperFiles, packageDirectoryOf, type HelperResolution } from "../exec/helper.ts";
import { shownInView } from "../sandbox/view.ts";
import type { RuntimeOptions } from "../options.ts";
import { lazyOs } from "../platform/lazy.ts";
import { removeTemporaryTree } from "../workspace/owned-tree.ts";
import { withoutProgramName } from "../output.ts";
import { runOperation } from "./common.ts";
import { installCommand } from "./installer.ts";
import { daemonHelper, HELPER_PACKAGE } from "./paseo-install.ts";
import type { Check } from "./report.ts";
import { captureExec } from "./run.ts";
import { newExecId } from "./run-envelope.ts";

/** What the later daemon requires of the helper's describe (SPEC-later-dialect §4). */
const REQUIRED_CAPABILITIES = ["files", "watch", "resolve-command"] as const;

const NAME = "workspace helper";
const CREATE_TIMEOUT_MS = 30_000;
const DESCRIBE_TIMEOUT_MS = 15_000;

/**
 * The fix for a missing or broken helper, each a step that works today: a copy of the helper of
 * a Paseo daemon installed here (or helperPath at it), else the helper's single file from a
 * checkout of Paseo's repository. @getpaseo/workspace-helper is not on npm yet, so `--helper-npm`
 * is not offered (docs/helper-install.md).
 */
function installAdvice(): Pick<Check, "hint" | "alternatives"> {
  const dir = dirname(process.execPath);
  const helperPath = `# set "helperPath" (absolute) in the runtime's options in Paseo's config.json (doctor: --helper-path PATH)`;
  const found = daemonHelper();
  if (found !== null) {
    const digest = new Bun.CryptoHasher("sha256").update(readFileSync(found.path)).digest("hex");
    return {
      hint: `${installCommand(["--dir", dir, "--helper-from", found.path, "--helper-sha256", digest])}   # a copy of the helper of the Paseo daemon installed here (${HELPER_PACKAGE} ${found.version}, from ${found.from})`,
      alternatives: [`# set "helperPath": ${JSON.stringify(found.path)} in the runtime's options in Paseo's config.json: the daemon's own helper, upgraded with it`],
    };
  }
  return {
    hint: `${installCommand(["--dir", dir, "--helper-from", "PASEO_CHECKOUT/packages/workspace-helper/src/executable.mjs", "--helper-sha256", "HEX"])}   # the helper's one file, from a checkout of github.com/getpaseo/paseo (HEX: its sha256sum); not on npm yet: docs/helper-install.md`,
    alternatives: [helperPath],
  };
}

/**
 * What the helper's describe answered, or why it did not: `unchecked` when the throwaway
 * workspace could not be made (not the helper's fault; another check names the cause).
 */
type Described = { ok: true; capabilities: string[]; protocolVersion: unknown; version: unknown } | { ok: false; reason: string; unchecked?: boolean };

/** What of the daemon's options decides how the helper runs: where it is, and the isolation it runs under. */
type HelperOptions = Pick<RuntimeOptions, "helperPath" | "isolation" | "network" | "sandboxReadOnly" | "sandboxReadWrite">;

/** The throwaway workspace's options: its own home and owner, and the daemon's helper and isolation settings. */
function throwawayOptions(dir: string, given: HelperOptions): Record<string, unknown> {
  const { helperPath, isolation, network, sandboxReadOnly, sandboxReadWrite } = given;
  return {
    stateDirectory: join(dir, "home"),
    owner: "doctor",
    ...(helperPath === undefined ? {} : { helperPath }),
    // The daemon runs the helper like any workload: under the sandbox when it is configured.
    ...(isolation === "sandbox" ? { isolation, network, sandboxReadOnly, sandboxReadWrite } : {}),
  };
}

/** Runs `paseo-workspace-helper describe` through this runtime in a throwaway workspace. */
async function describeThroughRuntime(given: HelperOptions): Promise<Described> {
  const dir = realpathSync(mkdtempSync(join(lazyOs().tmpdir(), "paseo-host-runtime-doctor-")));
  const workspaceId = "doctor-helper-check";
  const root = join(dir, "workspace");
  const options = throwawayOptions(dir, given);
  try {
    mkdirSync(root);
    const input = { workspaceId, project: { projectId: "doctor", source: { kind: "host-directory", path: root } }, placement: { kind: "existing" } };
    const created = runOperation(["create", "--workspace-id", workspaceId], { protocolVersion: 1, input, options }, { timeoutMs: CREATE_TIMEOUT_MS, stderr: "capture" });
    if (created.status !== 0) return { ok: false, unchecked: true, reason: `create of a throwaway workspace failed: ${firstLine(created.stderr)}` };
    const envelope = {
      type: "spawn" as const,
      protocolVersion: 1 as const,
      argv: [HELPER_NAME, "describe"],
      env: {},
      purpose: { kind: "workspace-helper" as const },
      options,
      execId: newExecId(),
      stdio: { kind: "pipes" as const },
    };
    const ran = await captureExec(workspaceId, envelope, DESCRIBE_TIMEOUT_MS);
    if (ran.failure !== null) return { ok: false, reason: `exec failed: ${firstLine(ran.failure)}` };
    if (ran.exit?.code !== 0) return { ok: false, reason: `describe ended with ${ran.exit?.signal ?? `exit ${ran.exit?.code}`}${ran.stderr ? `: ${firstLine(ran.stderr)}` : ""}` };
    return parseDescribe(ran.stdout);
  } finally {
    runOperation(["destroy", "--workspace-id", workspaceId], { protocolVersion: 1, options }, { timeoutMs: CREATE_TIMEOUT_MS, stderr: "ignore" });
    removeTemporaryTree(dir);
  }
}

function firstLine(text: string): string {
  return withoutProgramName(text.trim().split("\n")[0]!) || "(no message)";
}

function parseDescribe(stdout: string): Described {
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return { ok: false, reason: `describe did not print one JSON value: ${JSON.stringify(stdout.slice(0, 120))}` };
  }
  const capabilities = (value as { capabilities?: unknown } | null)?.capabilities;
  if (!Array.isArray(capabilities) || !capabilities.every((item) => typeof item === "string")) {
    return { ok: false, reason: `describe printed no capabilities list: ${stdout.trim().slice(0, 120)}` };
  }
  const { protocolVersion, version } = value as { protocolVersion?: unknown; version?: unknown };
  return { ok: true, capabilities, protocolVersion, version };
}

/**
 * What a helper that failed in the sandbox may need that the sandbox does not show, where the
 * runtime cannot know it (a wrapper script that runs a program from elsewhere): absolute paths
 * named in the helper's own text (a script's) and in what its failure said, that exist here
 * and that the sandbox would not show. Each as its package directory (the nearest holding a
 * package.json), else itself.
 */
function unseenPaths(found: HelperResolution, failure: string, options: HelperOptions): string[] {
  const view = { root: null, readOnly: [...options.sandboxReadOnly, ...helperFiles(found), process.execPath], readWrite: [...options.sandboxReadWrite] };
  let text = failure;
  // Not readable here (gone, not ours to read, a directory): only the failure's words are left.
  const head = tolerating([...PATH_MISSING, ...NO_ACCESS, "EISDIR"], null, () => readFileSync(found.path).subarray(0, 64 * 1024));
  if (head !== null && !head.includes(0)) text += `\n${head.toString("utf8")}`;
  const named = [...new Set(text.match(/\/[^\s'"`:;,()<>|&$]+/g) ?? [])].filter((path) => path.length > 1 && existsSync(path) && !shownInView(path, view));
  return [...new Set(named.map((path) => packageDirectoryOf(path) ?? path))];
}

function where(found: HelperResolution): string {
  return `${found.path} (from ${found.source}${found.javascript ? ", JavaScript run by the embedded engine" : ""})`;
}

/** The helper check: not found → warn (with the install command); found but broken → fail. */
export async function checkHelper(options: HelperOptions): Promise<Check> {
  let found: HelperResolution;
  try {
    found = describeHelperResolution(options.helperPath);
  } catch (error) {
    const detail = `${(error as Error).message}; the daemon runs its describe after every create and counts a failure as a failed create`;
    return { name: NAME, status: "warn", detail, ...installAdvice() };
  }
  const described = await describeThroughRuntime(options);
  if (!described.ok && described.unchecked) return { name: NAME, status: "skip", detail: `${where(found)}; its describe was not run: ${described.reason}` };
  if (!described.ok) {
    const missing = options.isolation === "sandbox" ? unseenPaths(found, described.reason, options) : [];
    if (missing.length > 0) {
      const hint = `# add ${missing.map((path) => JSON.stringify(path)).join(", ")} to "sandboxReadOnly" in the runtime's options: the helper reads ${missing.length === 1 ? "it" : "them"}, and the sandbox does not show ${missing.length === 1 ? "it" : "them"}`;
      return { name: NAME, status: "fail", detail: `${where(found)}: ${described.reason}`, hint };
    }
    return { name: NAME, status: "fail", detail: `${where(found)}: ${described.reason}`, ...installAdvice() };
  }
  const missing = REQUIRED_CAPABILITIES.filter((capability) => !described.capabilities.includes(capability));
  const shown = `describe through exec${options.isolation === "sandbox" ? " in the sandbox" : ""}: capabilities ${described.capabilities.join(", ") || "none"}`;
  if (missing.length > 0) {
    return { name: NAME, status: "fail", detail: `${where(found)}: ${shown}; missing ${missing.join(", ")} (the daemon requires ${REQUIRED_CAPABILITIES.join(", ")})`, ...installAdvice() };
  }
  return { name: NAME, status: "ok", detail: `${where(found)}: ${shown}` };
}
