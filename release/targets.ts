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

/** The target named by its Bun name (`bun-linux-arm64`) or its platform (`linux-arm64`). */
export function findTarget(name: string): Target | undefined {
  return TARGETS.find((t) => t.bun === name || t.platform === name);
}

/** The executable names inside every archive. */
export const RUNTIME_NAME = "paseo-host-runtime";
export const HELPER_NAME = "paseo-workspace-helper";
export const SUMS_NAME = "SHA256SUMS";

/** Versions we publish: X.Y.Z with an optional pre-release, the characters install.sh accepts. */
export const VERSION_PATTERN = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

/** `paseo-host-runtime-X.Y.Z-<platform>`: the archive's name without `.tar.gz`, and its top directory. */
export function archiveStem(version: string, t: Target): string {
  return `${RUNTIME_NAME}-${version}-${t.platform}`;
}

export function archiveName(version: string, t: Target): string {
  return `${archiveStem(version, t)}.tar.gz`;
}
