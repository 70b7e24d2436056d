// Ad-hoc re-signing of macOS binaries, on a macOS host only (codesign is Apple's tool).
//
// Why: `bun build --compile --target=bun-darwin-x64` (Bun 1.4.4, from Linux or macOS) keeps the
// Bun runtime's original signature while changing the bytes it covers, so the page hashes no
// longer match and macOS kills the process at launch. The arm64 output is re-signed ad hoc by
// Bun and verifies. Re-signing both with `codesign --force --sign -` and checking with
// `codesign --verify --strict` makes the archives trustworthy whatever Bun does.
import { $ } from "zx";

/** True where `codesign` exists: a macOS host. */
export function canCodesign(): boolean {
  return process.platform === "darwin" && Bun.which("codesign") !== null;
}

/** Replaces any signature of `file` with an ad-hoc one, then verifies it strictly. */
export async function adHocSign(file: string): Promise<void> {
  await $({ quiet: true })`codesign --force --sign - ${file}`;
  await $({ quiet: true })`codesign --verify --strict --verbose=2 ${file}`;
}
