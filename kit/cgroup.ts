/**
 * A private cgroup root per test: a fresh directory under this test process's own cgroup v2
 * directory (on this machine /sys/fs/cgroup/unified), given to the runtime as
 * options.cgroupRoot. cleanup() kills whatever is still in it and removes it, so a test never
 * leaves a cgroup behind. Null where this host has no usable cgroup v2 hierarchy.
 */
import { existsSync, readdirSync, rmdirSync, writeFileSync, readFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { ownCgroupDir, supportsKill, writable } from "../src/platform/cgroup.ts";
import { isLinux } from "../src/platform/os.ts";

export interface TestCgroupRoot {
  path: string;
  cleanup(): void;
}

/** Why cgroup tests cannot run here, or null when they can. */
export const CGROUP_UNAVAILABLE: string | null = (() => {
  if (!isLinux) return "cgroups exist only on Linux";
  const own = ownCgroupDir();
  if (own === null) return "no cgroup v2 directory for this process (/proc/self/cgroup)";
  if (!writable(own)) return `${own} is not writable by this user`;
  if (!supportsKill(own)) return "this kernel has no cgroup.kill (Linux 5.14)";
  return null;
})();

let counter = 0;

/** A fresh cgroup root, or null (see CGROUP_UNAVAILABLE). */
export function testCgroupRoot(): TestCgroupRoot | null {
  if (CGROUP_UNAVAILABLE) return null;
  const path = join(ownCgroupDir()!, `phr-test-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(path);
  return { path, cleanup: () => removeCgroupTree(path) };
}

/** Kills every process below `dir`, then removes it and every cgroup under it. */
export function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  writeFileSync(join(dir, "cgroup.kill"), "1");
  for (let i = 0; i < 500 && /^populated 1$/m.test(readFileSync(join(dir, "cgroup.events"), "utf8")); i++) Bun.sleepSync(10);
  const remove = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) if (entry.isDirectory()) remove(join(at, entry.name));
    rmdirSync(at);
  };
  remove(dir);
}

/** Cgroup directories under `dir` (relative paths), for asserting what a test left. */
export function cgroupsUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  const visit = (at: string, prefix: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      found.push(`${prefix}${entry.name}`);
      visit(join(at, entry.name), `${prefix}${entry.name}/`);
    }
  };
  visit(dir, "");
  return found;
}
