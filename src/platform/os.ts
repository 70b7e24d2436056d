/**
 * Which operating system and CPU this is: the one home of every platform check. Linux has
 * /proc, pidfds, openat2, cgroup v2 and copy_file_range; everywhere else (macOS) takes the
 * portable path of each platform module. macOS is also where numbers and names differ
 * (libc.dylib, `__error`, tcflow's and lseek's constants…).
 */
export const isLinux = process.platform === "linux";
export const isMacOS = process.platform === "darwin";
/** arm64 (else x64): the CPUs the release is built for; they number some Linux syscalls apart. */
export const isArm64 = process.arch === "arm64";
