/** Whether a descriptor is a terminal, without loading node:tty at start-up (see lazy.ts). */
export function isTerminal(fd: number): boolean {
  return (require("node:tty") as typeof import("node:tty")).isatty(fd);
}
