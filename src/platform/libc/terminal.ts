/** Flow control of a terminal's output (src/exec/pty-output.ts). */
import { errno, failed, libcFunction } from "./symbols.ts";
import { isMacOS } from "../os.ts";

const tcflow = libcFunction("tcflow", { args: ["i32", "i32"], returns: "i32" });

/** tcflow(3) actions differ between Linux and the BSDs. */
const TCOOFF = isMacOS ? 1 : 0;
const TCOON = isMacOS ? 2 : 1;

/** Suspends (false) or restarts (true) output of the terminal `fd` refers to. */
export function setTerminalOutput(fd: number, running: boolean): void {
  if (tcflow(fd, running ? TCOON : TCOOFF) < 0) throw failed(errno(), `tcflow(${fd}, ${running ? "TCOON" : "TCOOFF"})`);
}
