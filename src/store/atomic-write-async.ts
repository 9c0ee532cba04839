// writeFileAtomic off the event loop, for a server: the same write-then-rename (and fsyncs when
// durable) done by libuv's thread pool, so a busy server's one thread never waits on the disk.
// BackgroundFile keeps one file's latest content written: saves made while a write runs are
// folded into the next one (only the newest content matters), durable if any of them asked. With
// `settleMs`, a save that need not be durable waits that long for later ones to fold into it (a
// short turn's record is then written at its start and its end only); a durable save, or
// flushed(), writes at once.
import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { AtomicWriteOptions } from './atomic-write.js';
import { PRIVATE_FILE_MODE, tempName } from './atomic-write.js';
import { personMode } from './private-umask.js';

async function fsyncDir(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  }
}

export async function writeFileAtomicAsync(
  path: string,
  data: string | Uint8Array,
  options: Pick<AtomicWriteOptions, 'mode' | 'durable'> = {},
): Promise<void> {
  const temp = tempName(path);
  const durable = options.durable !== false;
  try {
    const mode = options.mode ?? PRIVATE_FILE_MODE;
    const handle = await open(temp, 'wx', mode);
    try {
      const shared = personMode(mode);
      if (shared !== undefined) await handle.chmod(shared);
      await handle.writeFile(data);
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  if (durable) await fsyncDir(dirname(path));
}

export class BackgroundFile {
  private pending: { data: string; durable: boolean } | undefined;
  private running: Promise<void> | undefined;
  private failure: Error | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** `before`: what must be done before the first write (its folder made); its failure is the first write's. */
  constructor(
    private readonly path: string,
    private readonly mode?: number,
    private readonly settleMs = 0,
    private readonly before: Promise<unknown> = Promise.resolve(),
  ) {}

  /** Writes `data` soon (`now`: without waiting `settleMs`); returns at once. */
  save(data: string, durable: boolean, now = false): void {
    this.pending = { data, durable: durable || (this.pending?.durable ?? false) };
    if (this.running) return;
    if (now || this.pending.durable || this.settleMs <= 0) {
      this.start();
      return;
    }
    // Not kept alive for it: a process that ends meanwhile has flushed() what it needed.
    this.timer ??= setTimeout(() => this.start(), this.settleMs).unref();
  }

  /** Resolves once every save so far is on disk; rejects with the first write that failed. */
  async flushed(): Promise<void> {
    if (this.pending && !this.running) this.start();
    while (this.running) await this.running;
    if (this.failure) throw this.failure;
  }

  private start(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running ??= this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending) {
        const next = this.pending;
        this.pending = undefined;
        try {
          await this.before;
          await writeFileAtomicAsync(this.path, next.data, {
            durable: next.durable,
            ...(this.mode === undefined ? {} : { mode: this.mode }),
          });
        } catch (error) {
          this.failure ??= error as Error;
        }
      }
    } finally {
      this.running = undefined;
    }
  }
}
