// The named pipe of one Claude Code run's hook channel (channel-frame.ts): made by atlas in the
// task's channel/ folder (read-only inside the sandbox: a step can write into the pipe, not
// replace it), read for as long as the run lasts, removed after it.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { taskFiles } from '../../store/paths.js';
import type { HookChannelTarget } from './channel-receive.js';
import { HookReceiver } from './channel-receive.js';

/** How long atlas waits, once the run ended, for hooks still writing (then what came is kept). */
const DRAIN_MS = 5_000;

export interface HookChannel {
  path: string;
  receiver: HookReceiver;
  /** Reads what is left (every writer gone, or DRAIN_MS), records it, removes the pipe. */
  close(): Promise<void>;
}

let counter = 0;

export function openHookChannel(target: HookChannelTarget): HookChannel {
  const dir = taskFiles(target.taskDir).channel;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `hook-${process.pid}-${++counter}.fifo`);
  rmSync(path, { force: true });
  execFileSync('mkfifo', ['-m', '600', path]);
  const receiver = new HookReceiver(target);
  const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  // Held open by atlas until close(): without a writer the reader would see the end at once.
  let holdFd: number | undefined = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  const socket = new Socket({ fd: readFd, readable: true, writable: false });
  const ended = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => receiver.push(chunk));
    socket.on('end', resolve);
    socket.on('close', () => resolve());
    socket.on('error', () => resolve());
  });
  return {
    path,
    receiver,
    async close() {
      if (holdFd !== undefined) closeSync(holdFd);
      holdFd = undefined;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_MS)))]);
      clearTimeout(timer);
      socket.destroy();
      rmSync(path, { force: true });
      await receiver.settled();
    },
  };
}
