/**
 * Two connections joined into one byte pipe, both ways, with backpressure: a side that cannot
 * take more (the kernel did not take all of a write) pauses the side that feeds it until it
 * drains. So a slow reader holds the writer in the kernel's buffers and the proxy never holds
 * more than about one chunk per direction, whatever either peer does. An end is passed on
 * (half-close); a side that closes unclean (a reset, an error, bytes it never took) ends the
 * other at once.
 */
import type { Conn } from "./conn.ts";

export interface SpliceCounts {
  /** Bytes from the client to the upstream. */
  bytesOut: number;
  /** Bytes from the upstream to the client. */
  bytesIn: number;
  /** The most bytes ever held in the proxy for one side (the memory bound, measured). */
  peakQueued: number;
}

export interface Spliced {
  client: Conn;
  upstream: Conn;
  /** Bytes the client sent past its opening, delivered to the upstream first. */
  early: Buffer;
  /** Whether the client had already ended (its end is passed on after `early`). */
  clientEnded: boolean;
}

export function splice({ client, upstream, early, clientEnded }: Spliced, done: (counts: SpliceCounts) => void): void {
  const counts: SpliceCounts = { bytesOut: 0, bytesIn: 0, peakQueued: 0 };
  const feed = (from: Conn, to: Conn, count: (n: number) => void) => {
    from.read({
      data: (chunk) => {
        count(chunk.length);
        const room = to.write(chunk);
        counts.peakQueued = Math.max(counts.peakQueued, to.queued);
        if (room) return;
        from.pause();
        to.onDrain(() => from.resume());
      },
      end: () => to.end(),
    });
    from.resume();
  };
  if (early.length > 0) {
    counts.bytesOut += early.length;
    upstream.write(early);
  }
  let open = 2;
  const closed = (other: Conn) => (clean: boolean) => {
    // A clean close already passed its end on, and the other side closes once its queue is
    // written; anything else (reset, error, destroy) leaves nothing for the other to carry.
    if (!clean) other.destroy();
    if (--open === 0) done(counts);
  };
  client.onClose(closed(upstream));
  upstream.onClose(closed(client));
  if (clientEnded) upstream.end();
  else feed(client, upstream, (n) => (counts.bytesOut += n));
  feed(upstream, client, (n) => (counts.bytesIn += n));
}
