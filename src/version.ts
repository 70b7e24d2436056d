declare const PASEO_HOST_RUNTIME_VERSION: string | undefined;

/** Release version, embedded at build time with `--define`; "dev" when run from source. */
export const VERSION: string = typeof PASEO_HOST_RUNTIME_VERSION === "string" ? PASEO_HOST_RUNTIME_VERSION : "0.0.0-dev";

/** Versions the project publishes: X.Y.Z with an optional pre-release, the characters install.sh accepts. */
export const RELEASE_VERSION_PATTERN = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

/** `<os>-<arch>` this binary was built for (the running platform, which is the same thing). */
export const TARGET = `${process.platform}-${process.arch}`;
