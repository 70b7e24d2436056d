/** What an inherited descriptor is, as far as the exec protocol cares. */
import { fstatSync, readlinkSync } from "node:fs";
import { FD_NOT_OPEN, tolerating } from "./errno.ts";
import { isLinux } from "./os.ts";

/** The kinds a daemon's descriptor can be; "other" is anything else (an epoll or eventfd of Bun's own). */
export type DescriptorKind = "closed" | "pipe" | "socket" | "file" | "character device" | "other";

/**
 * The kind of `fd`, and what it is in words. On Linux /proc/self/fd tells an anonymous inode
 * (Bun's own epoll and eventfd sit at 3 and 4 when the process got only three stdio) from a
 * file whatever mode the kernel gives it; elsewhere fstat's file type decides.
 */
export function describeDescriptor(fd: number): { kind: DescriptorKind; what: string } {
  const stat = tolerating(FD_NOT_OPEN, null, () => fstatSync(fd));
  if (stat === null) return { kind: "closed", what: "not open" };
  if (isLinux) {
    // No /proc (a container without it): fstat alone decides below.
    const target = tolerating(["ENOENT"], "", () => readlinkSync(`/proc/self/fd/${fd}`));
    if (target.startsWith("anon_inode:")) return { kind: "other", what: `${target}, this process's own` };
  }
  if (stat.isFIFO()) return { kind: "pipe", what: "a pipe" };
  if (stat.isSocket()) return { kind: "socket", what: "a socket" };
  if (stat.isFile()) return { kind: "file", what: "a file" };
  if (stat.isCharacterDevice()) return { kind: "character device", what: "a character device" };
  return { kind: "other", what: "neither a pipe, a socket nor a file" };
}
