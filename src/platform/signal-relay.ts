/**
 * Signal forwarding without the JavaScript event loop (Linux x86-64, kernel 6.9+).
 *
 * Through the event loop a forwarded signal waits for Bun's handler to wake the JS thread,
 * our listener to run, and `kill` (bench/README.md: ~0.1 ms p50 on top of the kernel's own
 * delivery). Here the handler the kernel runs for the signal is itself the forwarder: a few
 * instructions, written into an executable page, that make two system calls and return —
 * async-signal-safe, whichever of Bun's threads the kernel picks, no mask to arrange.
 *
 *   waitid(P_PIDFD, leader, NULL, WEXITED | WNOHANG | WNOWAIT, NULL)
 *     0 while the leader is our unreaped child (running or a zombie); -ECHILD once it was
 *     reaped, or if the pidfd names anything but our child: then nothing is sent, exactly
 *     as the event-loop path sends nothing once the leader is reaped.
 *   pidfd_send_signal(leader, signo, NULL, PIDFD_SIGNAL_PROCESS_GROUP)
 *     the signal to the leader's process group: what kill(-pid) does, with the group named
 *     by the pidfd, so it can never be a stranger's group.
 *
 * Why not a thread in sigwaitinfo/signalfd (issue 14's suggestion): a process-directed signal
 * goes to any thread that does not block it, and Bun's own threads exist, with an empty mask,
 * before the first line of ours runs; pthread_sigmask changes only the calling thread. Why not
 * bun:ffi's `cc` (TinyCC): it cannot read a source embedded in the compiled binary, needs the
 * C library's development files on the host, and costs 8–10 ms per process (bench/README.md).
 *
 * Elsewhere (arm64, macOS, kernels without the group flag, a system refusing executable
 * memory) arm() returns null and signals keep going through the event loop.
 */
import type { Pointer } from "bun:ffi";
import { closeSync } from "node:fs";
import {
  EINVAL,
  executablePage,
  isUnreapedChild,
  P_PIDFD,
  PIDFD_SIGNAL_PROCESS_GROUP,
  pidfdOpen,
  pidfdSignal,
  replaceHandlers,
  restoreActions,
  SYS_PIDFD_SEND_SIGNAL,
  WAIT_PEEK,
} from "./libc.ts";
import { isLinux } from "./os.ts";

/** waitid's x86-64 system call number (the pidfd calls' numbers and the flags are libc.ts's). */
const SYS_WAITID = 247;

function u32(value: number): number[] {
  return [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff];
}

/** The handler, `void handler(int signo)` (System V ABI: signo in edi); touches no memory, not even errno. */
function handlerCode(pidfd: number): Uint8Array {
  const send = [
    [0xb8, ...u32(SYS_PIDFD_SEND_SIGNAL)], //   mov eax, 424
    [0xbf, ...u32(pidfd)], //                   mov edi, pidfd
    [0x44, 0x89, 0xce], //                      mov esi, r9d       ; signo
    [0x31, 0xd2], //                            xor edx, edx       ; info: as kill(2) would
    [0x41, 0xba, ...u32(PIDFD_SIGNAL_PROCESS_GROUP)], // mov r10d, 4
    [0x0f, 0x05], //                            syscall
  ].flat();
  return new Uint8Array(
    [
      [0x41, 0x89, 0xf9], //                    mov r9d, edi       ; keep signo (waitid has no 6th argument)
      [0xb8, ...u32(SYS_WAITID)], //            mov eax, 247
      [0xbf, ...u32(P_PIDFD)], //               mov edi, P_PIDFD
      [0xbe, ...u32(pidfd)], //                 mov esi, pidfd
      [0x31, 0xd2], //                          xor edx, edx       ; infop NULL
      [0x41, 0xba, ...u32(WAIT_PEEK)], //      mov r10d, flags
      [0x45, 0x31, 0xc0], //                    xor r8d, r8d       ; rusage NULL
      [0x0f, 0x05], //                          syscall
      [0x85, 0xc0], //                          test eax, eax
      [0x75, send.length], //                   jnz ret            ; reaped, or not our child
      send,
      [0xc3], //                                ret
    ].flat(),
  );
}

const supported = isLinux && process.arch === "x64";

/** The forwarded signals' handlers while armed, and Bun's own to put back. */
export class SignalRelay {
  #previous: Uint8Array | null;

  private constructor(
    private readonly signals: readonly number[],
    previous: Uint8Array,
  ) {
    this.#previous = previous;
  }

  /**
   * From now on `signals` go straight to the process group `leader` leads, if `leader` is
   * this process's unreaped child (checked here through the pidfd, and again by the handler
   * on every signal). Null otherwise, or where this platform or kernel cannot: the caller
   * then keeps forwarding itself.
   */
  static arm(leader: number, signals: readonly number[]): SignalRelay | null {
    if (!supported) return null;
    let pidfd = -1;
    try {
      pidfd = pidfdOpen(leader);
      if (pidfd < 0) return null;
      // The handler would send nothing to anything else (a sandboxed workload is bwrap's child).
      if (!isUnreapedChild(pidfd)) throw new Error("not our unreaped child");
      // Signal 0 only checks; EINVAL: a kernel before 6.9, without the group flag.
      if (pidfdSignal(pidfd, 0, true) === -EINVAL) throw new Error("no PIDFD_SIGNAL_PROCESS_GROUP");
      const handler: Pointer = executablePage(handlerCode(pidfd));
      return new SignalRelay(signals, replaceHandlers(signals, handler));
    } catch {
      // Tolerated, never thrown (this runs from a timer): libc that cannot be loaded, a kernel
      // or system that refuses; forwarding stays on the event loop, as before. A page, if
      // one was mapped, stays.
      if (pidfd >= 0) closeSync(pidfd);
      return null;
    }
  }

  /**
   * Bun's handlers back, before anything else looks at these signals (the exit mirror). The
   * pidfd stays open until the wrapper exits: a handler already running on another thread may
   * still use its number, which must not name anything else meanwhile. The page stays too.
   */
  disarm(): void {
    if (this.#previous) restoreActions(this.signals, this.#previous);
    this.#previous = null;
  }
}
