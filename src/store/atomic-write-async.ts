// writeFileAtomic off the event loop, for a server: the same write-then-rename (and fsyncs when
// durable) done by libuv's thread pool, so a busy server's one thread never waits on the disk.
// BackgroundFile keeps one file's latest content written: saves made while a write runs are
// folded into the next one (only the newest content matters), durable if any of them asked. With
// `settleMs`, a save that need not be durable waits that long for later ones to fold into it (a
// short turn's record is then written at its start and its end only); a durable save, or
// flushed(), writes at once.
import { close, fchmod, fsync, open, rename, unlink, write } from 'node:fs';
import { dirname } from 'node:path';
import type { AtomicWriteOptions } from './atomic-write.js';
import { PRIVATE_FILE_MODE, tempName } from './atomic-write.js';
import { personMode } from './private-umask.js';

// Node's callback file calls, as promises: on plain descriptors, where fs/promises makes a
// FileHandle per file opened (an object with its own close and finalizer), which a server writing
// several files per turn paid for on its one thread.
type Callback<T> = (error: NodeJS.ErrnoException | null, value: T) => void;

/** One callback-style file call as a promise. */
export function fsCall<T = void>(start: (done: Callback<T>) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))));
}

export function openFd(path: string, flags: string, mode?: number): Promise<number> {
  return fsCall<number>((done) => open(path, flags, mode, done));
}

export function closeFd(fd: number): Promise<void> {
  return fsCall((done) => close(fd, (error) => done(error, undefined)));
}

/** Writes all of `data` at the descriptor's position (the end, for a file opened to append). */
export async function writeWhole(fd: number, data: string | Uint8Array): Promise<void> {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let offset = 0;
  while (offset < bytes.length) offset += await fsCall<number>((done) => write(fd, bytes, offset, bytes.length - offset, null, done));
}

const sync = (fd: number) => fsCall((done) => fsync(fd, (error) => done(error, undefined)));

async function fsyncDir(dir: string): Promise<void> {
  try {
    const fd = await openFd(dir, 'r');
    try {
      await sync(fd);
    } finally {
      await closeFd(fd);
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
    const fd = await openFd(temp, 'wx', mode);
    try {
      const shared = personMode(mode);
      if (shared !== undefined) await fsCall((done) => fchmod(fd, shared, (error) => done(error, undefined)));
      await writeWhole(fd, data);
      if (durable) await sync(fd);
    } finally {
      await closeFd(fd);
    }
    await fsCall((done) => rename(temp, path, (error) => done(error, undefined)));
  } catch (error) {
    await fsCall((done) => unlink(temp, (e) => done(e, undefined))).catch(() => {});
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
