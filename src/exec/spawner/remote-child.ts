// A process the spawner started, as runProcess sees a ChildProcess: its pid once started, its
// stdout/stderr (and fd 3) as the Unix socket connections its output comes in on, and 'spawn',
// 'exit', 'close' and 'error' in a ChildProcess's order, whichever of the IPC channel and the
// connections the server reads first.
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';

export class RemoteChild extends EventEmitter {
  pid: number | undefined;
  readonly stdio: (Socket | null)[] = [null, null, null, null];
  private streams = 0;
  private open = 0;
  private spawned = false;
  private exit: [number | null, NodeJS.Signals | null] | undefined;
  private ended = false;
  private exitEmitted = false;

  /**
   * `expected`: how many stream connections come (stdout, stderr, and fd 3 if asked for); `key`:
   * what their headers must carry.
   */
  constructor(
    private readonly expected: number,
    readonly key: string,
  ) {
    super();
  }

  get stdout(): Socket | null {
    return this.stdio[1] ?? null;
  }

  get stderr(): Socket | null {
    return this.stdio[2] ?? null;
  }

  /** A stream's connection arrived (paused, its header read). */
  attach(index: number, socket: Socket): void {
    if (this.ended || this.stdio[index]) {
      socket.destroy();
      return;
    }
    this.stdio[index] = socket;
    this.streams++;
    this.open++;
    socket.once('close', () => {
      this.open--;
      this.settle();
    });
    // A reset (the process killed while the server reads) ends the stream like its end.
    socket.on('error', () => undefined);
    this.settle();
  }

  started(pid: number): void {
    this.pid = pid;
    this.settle();
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.exit ??= [code, signal];
    this.settle();
  }

  /** The start failed (or the spawner died before it): the connections that came are dropped. */
  fail(error: Error): void {
    if (this.ended || this.spawned) return;
    this.ended = true;
    for (const s of this.stdio) s?.destroy();
    this.emit('error', error);
  }

  private settle(): void {
    if (this.ended) return;
    if (!this.spawned) {
      if (this.pid === undefined || this.streams < this.expected) return;
      this.spawned = true;
      this.emit('spawn');
      // The listeners are on now: the output flows (header-read connections wait paused).
      for (const s of this.stdio) s?.resume();
    }
    if (!this.exit) return;
    // 'exit' first, as a ChildProcess's; 'close' once the output has ended too.
    if (!this.exitEmitted) {
      this.exitEmitted = true;
      this.emit('exit', ...this.exit);
    }
    if (this.open === 0) {
      this.ended = true;
      this.emit('close', ...this.exit);
    }
  }
}
