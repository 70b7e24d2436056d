// The seven release targets and the names of what a release publishes.

/** One `bun build --compile --target=…` target and the platform name its archive carries. */
export interface Target {
  /** Bun's target name, passed to `--target`. */
  bun: string;
  os: "linux" | "darwin";
  arch: "x64" | "arm64";
  libc: "glibc" | "musl" | "darwin";
  /** x64 build for CPUs without AVX2 (same format as the default x64 build). */
  baseline: boolean;
  /** `<os>-<arch>[-baseline|-musl]`: what install.sh detects and asks for. */
  platform: string;
}

function target(bun: string, os: Target["os"], arch: Target["arch"], variant: "" | "baseline" | "musl"): Target {
  return {
    bun,
    os,
    arch,
    libc: os === "darwin" ? "darwin" : variant === "musl" ? "musl" : "glibc",
    baseline: variant === "baseline",
    platform: `${os}-${arch}${variant ? `-${variant}` : ""}`,
  };
}

export const TARGETS: readonly Target[] = [
  target("bun-linux-x64", "linux", "x64", ""),
  target("bun-linux-x64-baseline", "linux", "x64", "baseline"),
  target("bun-linux-arm64", "linux", "arm64", ""),
  target("bun-linux-x64-musl", "linux", "x64", "musl"),
  target("bun-linux-arm64-musl", "linux", "arm64", "musl"),
  target("bun-darwin-x64", "darwin", "x64", ""),
  target("bun-darwin-arm64", "darwin", "arm64", ""),
];

/**
 * Targets whose `bun build --compile` output is only correct once re-signed on macOS, and why
 * (measured with Bun 1.4.4; release/README.md). Elsewhere they are left out of a default release.
 */
export const MACOS_ONLY: ReadonlyMap<string, string> = new Map([
  [
    "bun-darwin-x64",
    "Bun keeps the original bun binary's Developer ID signature on it although the bytes it covers changed, so its page hashes do not match and macOS kills it at launch; only macOS can re-sign it (codesign)",
  ],
]);

/** The target named by its Bun name (`bun-linux-arm64`) or its platform (`linux-arm64`). */
export function findTarget(name: string): Target | undefined {
  return TARGETS.find((t) => t.bun === name || t.platform === name);
}

/** The executable names inside every archive. */
export const RUNTIME_NAME = "paseo-host-runtime";
export const HELPER_NAME = "paseo-workspace-helper";
export const SUMS_NAME = "SHA256SUMS";

/** Versions we publish (src/version.ts, where doctor's install fixes read it too). */
export { RELEASE_VERSION_PATTERN as VERSION_PATTERN } from "../src/version.ts";

/** `paseo-host-runtime-X.Y.Z-<platform>`: the archive's name without `.tar.gz`, and its top directory. */
export function archiveStem(version: string, t: Target): string {
  return `${RUNTIME_NAME}-${version}-${t.platform}`;
}

export function archiveName(version: string, t: Target): string {
  return `${archiveStem(version, t)}.tar.gz`;
}

/**
 * Semantic-version order: X.Y.Z by number, then a pre-release before its release, pre-release
 * fields compared one by one (numbers by value, below words). Negative when a precedes b.
 */
export function compareVersions(a: string, b: string): number {
  const split = (v: string) => {
    const dash = v.indexOf("-");
    return { core: (dash < 0 ? v : v.slice(0, dash)).split(".").map(Number), pre: dash < 0 ? [] : v.slice(dash + 1).split(".") };
  };
  const [x, y] = [split(a), split(b)];
  for (let i = 0; i < 3; i++) if (x.core[i] !== y.core[i]) return (x.core[i] ?? 0) - (y.core[i] ?? 0);
  if (x.pre.length === 0 || y.pre.length === 0) return y.pre.length - x.pre.length;
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const [p, q] = [x.pre[i], y.pre[i]];
    if (p === q) continue;
    if (p === undefined || q === undefined) return p === undefined ? -1 : 1;
    const [pn, qn] = [/^\d+$/.test(p), /^\d+$/.test(q)];
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return 0;
}
