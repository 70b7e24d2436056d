/**
 * Which operating system this is: the one Linux check. Linux has /proc, pidfds, openat2, cgroup v2
 * and copy_file_range; everywhere else (macOS) takes the portable path of each platform module.
 */
export const isLinux = process.platform === "linux";
