/**
 * Signals received by the wrapper. Handlers are installed before anything else happens
 * (a SIGTERM that lands before its handler would kill the wrapper and orphan the workload),
 * and what arrives before the workload exists is queued, then delivered in order.
 */

/** The signals the daemon sends to a wrapper, forwarded to the workload. */
export const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** Signals the wrapper itself must survive: a closed fd 4 or a background tty read. */
const IGNORED_SIGNALS = ["SIGPIPE", "SIGTTIN", "SIGTTOU"] as const;

export type Deliver = (signal: NodeJS.Signals) => void;

export class SignalForwarder {
  #deliver: Deliver | null = null;
  #queue: NodeJS.Signals[] = [];
  #closed = false;

  /** Installs the handlers; call first thing in `exec`. */
  install(): this {
    for (const signal of FORWARDED_SIGNALS) process.on(signal, () => this.receive(signal));
    for (const signal of IGNORED_SIGNALS) process.on(signal, () => {});
    return this;
  }

  /** A signal for the workload, from the wrapper's own handlers or a PTY control frame. */
  receive(signal: NodeJS.Signals): void {
    if (this.#closed) return;
    if (this.#deliver) this.#deliver(signal);
    else this.#queue.push(signal);
  }

  /** The workload exists: deliver the queue, then everything that follows. */
  attach(deliver: Deliver): void {
    this.#deliver = deliver;
    const queued = this.#queue;
    this.#queue = [];
    for (const signal of queued) deliver(signal);
  }

  /** The workload was reaped: never signal it again. */
  close(): void {
    this.#closed = true;
    this.#deliver = null;
    this.#queue = [];
  }
}
