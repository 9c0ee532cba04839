// The buffers a push's packs and a pull's ranged reads are read into: used again, never more than
// the operations under way at once, given back when an operation fails too.
import { describe, expect, it } from 'vitest';
import { BufferPool } from '../src/sync/scan/buffer-pool.js';
import { mapPool } from '../src/sync/scan/pool.js';

describe('BufferPool', () => {
  it('makes as many buffers as ran at once, and gives the same ones to later operations', async () => {
    const pool = new BufferPool(16);
    const seen = new Set<Buffer>();
    await mapPool(
      Array.from({ length: 20 }, (_, i) => i),
      3,
      (i) =>
        pool.with(async (buffer) => {
          expect(buffer.length).toBe(16);
          seen.add(buffer);
          buffer.fill(i);
          await new Promise((ok) => setTimeout(ok, i % 4));
          // Nobody else wrote into it while it was lent.
          expect(buffer.every((b) => b === i)).toBe(true);
        }),
    );
    expect(seen.size).toBe(3);
  });

  it('takes a buffer back when its operation fails, and passes the failure on', async () => {
    const pool = new BufferPool(8);
    let lent: Buffer | undefined;
    await expect(
      pool.with(async (buffer) => {
        lent = buffer;
        throw new Error('the store refused it');
      }),
    ).rejects.toThrow('the store refused it');
    expect(await pool.with(async (buffer) => buffer)).toBe(lent);
  });

  it('lets go of its buffers when released: they are emptied (their memory moved away and dropped), and new ones are made after', async () => {
    const pool = new BufferPool(1 << 20);
    const held = await pool.with(async (buffer) => buffer);
    expect(held.buffer.byteLength).toBe(1 << 20);
    pool.release();
    expect(held.length).toBe(0);
    expect(held.buffer.byteLength).toBe(0);
    const next = await pool.with(async (buffer) => buffer);
    expect(next === held).toBe(false);
    expect(next.length).toBe(1 << 20);
  });
});
