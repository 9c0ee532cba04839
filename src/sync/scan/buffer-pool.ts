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
}
