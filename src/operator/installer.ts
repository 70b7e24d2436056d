/**
 * The install.sh command lines doctor and remote doctor print as fixes. They name the release
 * site in use: PASEO_HOST_RUNTIME_BASE_URL (install.sh sets it when it runs doctor), else the
 * `base` line install.sh recorded beside this binary, else the project's GitHub releases.
 */
import { NO_ACCESS, PATH_MISSING, tolerating } from "../platform/errno.ts";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { RELEASE_VERSION_PATTERN, VERSION } from "../version.ts";
import { shellQuote } from "./common.ts";

const DEFAULT_SITE = "https://github.com/getpaseo/paseo-host-runtime/releases";
/** What install.sh records in the directory it installed into (install.sh: write_manifest). */
const MANIFEST = ".paseo-host-runtime.installed";

/** The release site this binary came from (see above), without a trailing slash. */
export function releaseSite(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PASEO_HOST_RUNTIME_BASE_URL) return env.PASEO_HOST_RUNTIME_BASE_URL.replace(/\/+$/, "");
  // Not installed by install.sh (no manifest), or its manifest not ours to read: the default site.
  const manifest = tolerating([...PATH_MISSING, ...NO_ACCESS], null, () => readFileSync(join(dirname(process.execPath), MANIFEST), "utf8"));
  return (manifest === null ? undefined : /^base (\S+)$/m.exec(manifest)?.[1]) ?? DEFAULT_SITE;
}

/**
 * `curl -fsSL <this version's install.sh> | sh -s -- --version V ARGS`: this same version from
 * the same site (a build that is not a release: the latest), every word quoted as needed. A
 * site other than the default is also given to the script (PASEO_HOST_RUNTIME_BASE_URL): the
 * script a mirror serves is the project's own, whose default is the public site.
 */
export function installCommand(args: readonly string[], site = releaseSite()): string {
  const release = RELEASE_VERSION_PATTERN.test(VERSION);
  const script = release ? `${site}/download/v${VERSION}/install.sh` : `${site}/latest/download/install.sh`;
  const words = [...(release ? ["--version", VERSION] : []), ...args].map(shellQuote);
  const env = site === DEFAULT_SITE ? "" : `PASEO_HOST_RUNTIME_BASE_URL=${shellQuote(site)} `;
  return `curl -fsSL ${shellQuote(script)} | ${env}sh -s -- ${words.join(" ")}`.trimEnd();
}

/** Whether `site` is this machine's own (a `file://` mirror, or one served on loopback): another machine cannot download from it. */
export function isLocalSite(site: string): boolean {
  if (site.startsWith("file:")) return true;
  const host = URL.parse(site)?.hostname ?? "";
  return host === "localhost" || host === "[::1]" || /^127\./.test(host);
}
