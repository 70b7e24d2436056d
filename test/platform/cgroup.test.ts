/** Reading where the cgroup v2 hierarchy is: mountinfo parsing and path mapping (also inside a cgroup namespace). */
import { describe, expect, test } from "bun:test";
import { directoryOf, hierarchyPath, ownCgroupDir, parseMountinfo, primeMigration, type Mount } from "../../src/platform/cgroup.ts";
import { linuxOnly, skipBecause } from "../support/platform.ts";

const HYBRID = [
  "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
  "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
  "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
  "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
  "42 31 0:39 / /mnt/with\\040space rw - ext4 /dev/sda1 rw",
  "43 31 0:40 /user.slice /sys/fs/cgroup/ns rw shared:5 master:1 - cgroup2 cgroup2 rw,nsdelegate",
].join("\n");

describe("mountinfo", () => {
  const mounts = parseMountinfo(HYBRID);

  test("fields, optional fields and octal escapes", () => {
    expect(mounts.map((m) => [m.mountPoint, m.fsType])).toEqual([
      ["/sys/fs/cgroup", "tmpfs"],
      ["/sys/fs/cgroup/memory", "cgroup"],
      ["/sys/fs/cgroup/pids", "cgroup"],
      ["/sys/fs/cgroup/unified", "cgroup2"],
      ["/mnt/with space", "ext4"],
      ["/sys/fs/cgroup/ns", "cgroup2"],
    ]);
    expect(mounts[1]!.superOptions).toEqual(["rw", "memory"]);
    expect(mounts[5]!.root).toBe("/user.slice");
  });

  test("a hierarchy path maps to its directory, and back, through the mount's root", () => {
    const unified = mounts[3] as Mount;
    const ns = mounts[5] as Mount;
    expect(directoryOf(unified, "/")).toBe("/sys/fs/cgroup/unified");
    expect(directoryOf(unified, "/a/b")).toBe("/sys/fs/cgroup/unified/a/b");
    expect(hierarchyPath(unified, "/sys/fs/cgroup/unified/a/b")).toBe("/a/b");
    expect(hierarchyPath(unified, "/sys/fs/cgroup/unified")).toBe("/");
    // A mount of a subtree shows only that subtree.
    expect(directoryOf(ns, "/user.slice/u.scope")).toBe("/sys/fs/cgroup/ns/u.scope");
    expect(directoryOf(ns, "/system.slice")).toBeNull();
    expect(hierarchyPath(ns, "/sys/fs/cgroup/ns/u.scope")).toBe("/user.slice/u.scope");
  });
});

describe("the migration prime", () => {
  const own = ownCgroupDir();
  // exec primes before the envelope, prepareLaunch again: one no-op migration, not two grace periods.
  test.skipIf(linuxOnly("platform/cgroup.test.ts, the migration prime", "cgroup v2") || skipBecause("platform/cgroup.test.ts, the migration prime", own === null ? "this process has no cgroup v2 directory (/proc/self/cgroup)" : null))("priming this process's own cgroup again is the first prime, not a second migration", async () => {
    const first = primeMigration(own!);
    expect(primeMigration(own!)).toBe(first);
    await first;
  });
});
