// Bytes from a stream into a new file (never an existing one), with the MD5 of what was written.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Received } from './safe-fs.js';

export async function streamToNewFile(source: NodeJS.ReadableStream, dest: string, mode = 0o644): Promise<Received> {
  const hash = createHash('md5');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  await pipeline(source, tap, createWriteStream(dest, { flags: 'wx', mode }));
  return { bytes, md5: hash.digest('hex') };
}
