// What the server and its spawner say: as objects over the IPC channel of main.ts, as frames and
// lines over the stdin and stdout of spawner.py (helper-process.ts writes and reads those). Each started
// process's stdout, stderr (and the sandbox's start signal, fd 3) are connections to the server's
// Unix socket, opened by the spawner before the start: each begins with a header naming its
// request and stream, and then carries the process's bytes straight to the server.

import type { SpawnSpec } from '../types.js';

/**
 * The server asks for a process. `key` (KEY_BYTES random bytes, hex) is in each of its stream
 * connections' headers: another process of the same user that reaches the socket cannot claim a
 * process's output by guessing its request number.
 */
export type SpawnRequest = { t: 'spawn'; id: number; key: string } & SpawnSpec;

export type SpawnerMessage =
  | { t: 'ready' }
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'error'; id: number; code: string | undefined; message: string }
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null };

export const KEY_BYTES = 16;
/** The first bytes of each stream connection: magic, request id (uint32 BE), stream index (1, 2 or 3), key. */
export const HEADER_BYTES = 9 + KEY_BYTES;
const MAGIC = 0x41544c53; // 'ATLS'

export function streamHeader(id: number, stream: number, key: string): Buffer {
  const b = Buffer.alloc(HEADER_BYTES);
  b.writeUInt32BE(MAGIC, 0);
  b.writeUInt32BE(id, 4);
  b.writeUInt8(stream, 8);
  b.write(key, 9, KEY_BYTES, 'hex');
  return b;
}

export function readHeader(b: Buffer): { id: number; stream: number; key: string } | undefined {
  if (b.length < HEADER_BYTES || b.readUInt32BE(0) !== MAGIC) return undefined;
  return { id: b.readUInt32BE(4), stream: b.readUInt8(8), key: b.toString('hex', 9, HEADER_BYTES) };
}
