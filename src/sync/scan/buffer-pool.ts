// Buffers of one size used again by the operations under way at once: as many as ever ran
// together, each given back when its operation ends. A new buffer per operation left them to the
// collector, tens of MB at once at 100,000 files (docs/sync.md#peak-memory).

export class BufferPool {
  private readonly free: Buffer[] = [];

  constructor(readonly size: number) {}

  /** Runs `use` with a buffer of `size` bytes (its own memory, never Node's shared pool), then takes it back. */
  async with<T>(use: (buffer: Buffer) => Promise<T>): Promise<T> {
    const buffer = this.free.pop() ?? Buffer.allocUnsafeSlow(this.size);
    try {
      return await use(buffer);
    } finally {
      this.free.push(buffer);
    }
  }

  /**
   * Lets go of the buffers' memory now, once no operation will use them again. A buffer made long
   * ago is freed only by a full collection, which may come after the next large allocation (a
   * push's manifest): moved to a new owner, dropped at once, its memory goes with the next minor
   * collection. The pool's buffers are empty afterwards (and so is any view of them still held).
   */
  release(): void {
    for (const buffer of this.free.splice(0)) structuredClone(buffer.buffer, { transfer: [buffer.buffer] });
  }
}
