/**
 * Two sockets joined into one byte pipe, both ways, with backpressure: a side that cannot
 * take more (its write buffer is full) pauses the side that feeds it until it drains. So a
 * slow reader holds the writer in the kernel's buffers and the proxy never queues more than
 * about one high-water mark per direction, whatever either peer does. An end is passed on
 * (half-close; both sockets must allow half-open); a side that closes without having ended
 * both ways (a reset, an error) ends the other at once.
 */
import type { Socket } from "node:net";

export interface SpliceCounts {
  /** Bytes from the client to the upstream. */
  bytesOut: number;
  /** Bytes from the upstream to the client. */
  bytesIn: number;
  /** The most bytes ever queued in the proxy for one side (the memory bound, measured). */
  peakQueued: number;
}

export interface Spliced {
  client: Socket;
  upstream: Socket;
  /** Bytes the client sent past its opening, delivered to the upstream first. */
  early: Buffer;
  /** Whether the client had already ended (its end is passed on after `early`). */
  clientEnded: boolean;
}

export function splice({ client, upstream, early, clientEnded }: Spliced, done: (counts: SpliceCounts) => void): void {
  const counts: SpliceCounts = { bytesOut: 0, bytesIn: 0, peakQueued: 0 };
  const feed = (from: Socket, to: Socket, count: (n: number) => void) => {
    let waiting = false;
    from.on("data", (chunk: Buffer) => {
      count(chunk.length);
      const room = to.write(chunk);
      counts.peakQueued = Math.max(counts.peakQueued, to.writableLength);
      if (room || waiting) return;
      waiting = true;
      from.pause();
      to.once("drain", () => {
        waiting = false;
        from.resume();
      });
    });
    from.on("end", () => to.end());
  };
  if (early.length > 0) {
    counts.bytesOut += early.length;
    upstream.write(early);
  }
  feed(client, upstream, (n) => (counts.bytesOut += n));
  feed(upstream, client, (n) => (counts.bytesIn += n));
  let open = 2;
  const closed = (side: Socket, other: Socket) => () => {
    // A clean close already passed its end on, and the other side closes once its queue is
    // written; anything else (reset, error, destroy) leaves nothing for the other to carry.
    if (!(side.readableEnded && side.writableFinished)) other.destroy();
    if (--open === 0) done(counts);
  };
  client.once("close", closed(client, upstream));
  upstream.once("close", closed(upstream, client));
  if (clientEnded) upstream.end();
  else client.resume();
  upstream.resume();
}
