// The hook channel's wire format (docs/claude-code.md, "In `execution.mode: sandbox`"). In sandbox
// mode the hook cannot write $ATLAS_HOME, so it hands each event to the atlas that launched
// Claude Code through a named pipe atlas made in a folder of its own, read-only in the sandbox
// (ATLAS_HOOK_PIPE). Many hooks write to it at once, so a message goes as lines of at most
// PIPE_BUF bytes, each written with one write(): the kernel keeps such writes whole. A line is
// `atlas-hook1 <id> <seq> <count> <base64>`.
import { closeSync, constants, openSync, writeSync } from 'node:fs';

export const FRAME_TAG = 'atlas-hook1';
/** Bytes of one line, newline included: PIPE_BUF on Linux and macOS, so one write() stays whole. */
export const MAX_LINE_BYTES = 4096;
/** Raw bytes per line: base64 of this plus the header stays under MAX_LINE_BYTES. */
export const CHUNK_BYTES = 3000;
/** The largest message atlas takes (a hook event with a big Write's content): larger ones are refused. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
export const MAX_CHUNKS = Math.ceil(MAX_MESSAGE_BYTES / CHUNK_BYTES);

/** What the hook sends: the event as Claude Code gave it, the cwd it ran in, the guard's refusal. */
export interface ChannelMessage {
  v: 1;
  input: string;
  cwd: string;
  denied?: string;
}

/** The lines of one message (`id` tells its lines from other hooks' interleaved ones). */
export function frameLines(payload: Buffer, id: string): string[] {
  const count = Math.max(1, Math.ceil(payload.length / CHUNK_BYTES));
  const lines: string[] = [];
  for (let seq = 0; seq < count; seq++) {
    lines.push(`${FRAME_TAG} ${id} ${seq} ${count} ${payload.subarray(seq * CHUNK_BYTES, (seq + 1) * CHUNK_BYTES).toString('base64')}\n`);
  }
  return lines;
}

/** How long a hook waits for room in a full pipe before it gives up on the event. */
const FULL_PIPE_WAIT_MS = 10_000;

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Writes a message to the channel, one write() per line. Throws when nobody reads the pipe (ENXIO:
 * atlas is gone) or it stays full. Opened without blocking: a pipe without a reader must not hang
 * the hook, so a full pipe is waited out here.
 */
export function sendMessage(path: string, message: ChannelMessage, fullPipeWaitMs = FULL_PIPE_WAIT_MS): void {
  const payload = Buffer.from(JSON.stringify(message), 'utf8');
  if (payload.length > MAX_MESSAGE_BYTES)
    throw new Error(`the event is ${payload.length} bytes, over the ${MAX_MESSAGE_BYTES} the channel takes`);
  const id = `${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  const fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  try {
    for (const line of frameLines(payload, id)) writeLine(fd, Buffer.from(line, 'latin1'), fullPipeWaitMs);
  } finally {
    closeSync(fd);
  }
}

function writeLine(fd: number, bytes: Buffer, waitMs: number): void {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      // At most PIPE_BUF bytes to a pipe: written whole or not at all.
      writeSync(fd, bytes);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > until) throw error;
      pause(2);
    }
  }
}

/** The channel's pipe from the environment, when atlas gave one. */
export function channelPath(env: NodeJS.ProcessEnv): string | undefined {
  const path = env['ATLAS_HOOK_PIPE'];
  return path?.startsWith('/') ? path : undefined;
}
