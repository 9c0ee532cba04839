// A streamed body handed to its reader one piece at a time, synchronously, from the stream's own
// 'data' events. Read with `for await`, every piece crosses a promise, and the pieces of the other
// reads under way wait in their queues meanwhile: they outlive two collections of V8's young
// generation, move to its old one and stay until a full collection, with their memory. A pull of
// an older version at 100,000 files held 6-10 MB of such dead buffers at its peak; handed over
// here, a piece is dead once its reader returns (docs/sync.md#peak-memory).
import type { Readable } from 'node:stream';
import { finished } from 'node:stream';

/** Calls `each` with every piece of a body as it arrives; resolves once the last was given. */
export type Pieces = (each: (piece: Buffer) => void) => Promise<void>;

/** No pieces at all (an empty range: nothing to ask for). */
export const noPieces: Pieces = async () => undefined;

/**
 * The `length` bytes of `body` after its first `skip` (a server that ignores Range sends the whole
 * object), as Pieces. A failure of the body is passed through `broken` (the caller marks it to be
 * tried again); one `each` throws is rejected as it is, and the body is dropped.
 */
export function bodyPieces(body: Readable, skip: number, length: number, broken: (error: unknown) => unknown = (e) => e): Pieces {
  return (each) =>
    new Promise<void>((resolve, reject) => {
      let at = 0;
      let settled = false;
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        if (error === undefined) resolve();
        else reject(error);
      };
      body.on('data', (part: Buffer) => {
        if (settled) return;
        const from = Math.max(0, skip - at);
        const to = Math.min(part.length, skip + length - at);
        at += part.length;
        try {
          if (to > from) each(part.subarray(from, to));
        } catch (error) {
          settle(error);
          body.destroy();
          return;
        }
        // Past the range: the whole object came, and the rest is not wanted. A range that ends here
        // ends its body next, which leaves the connection fit to be used again.
        if (at > skip + length) {
          settle();
          body.destroy();
        }
      });
      finished(body, (error) => settle(error ? broken(error) : undefined));
    });
}
