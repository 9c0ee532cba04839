// A file's MD5 (the seed's checksum) and SHA-256 (its blob's key), from one read. A file that fits
// READ_BUFFER is read whole into a buffer kept for the next file: a new buffer per file leaves them
// to the collector by the thousand (hashing 100,000 files of 10 KiB peaked at 135 MB so, at 118 MB
// with the buffers reused). A larger one is read as a stream.
import { createHash, hash } from 'node:crypto';
import { closeSync, createReadStream, openSync } from 'node:fs';
import { readFully } from './stream-file.js';

/** Most source files fit; the buffers kept are at most this times the readings that ran at once (16). */
const READ_BUFFER = 256 * 1024;

/** Buffers no reading holds now. */
const spare: Buffer[] = [];

/**
 * `use` applied to the whole file, when it fits READ_BUFFER (`size`, from a stat, says it should);
 * undefined when it does not, or has grown past it since. The bytes are valid only during `use`.
 */
async function withWhole<T>(path: string, size: number | undefined, use: (bytes: Buffer) => T): Promise<T | undefined> {
  if (size === undefined || size > READ_BUFFER) return undefined;
  const buffer = spare.pop() ?? Buffer.allocUnsafe(READ_BUFFER);
  try {
    // Synchronous (readFully says why); a file of READ_BUFFER at most holds the event loop briefly.
    const fd = openSync(path, 'r');
    let got: number | undefined;
    try {
      got = readFully(fd, buffer);
    } finally {
      closeSync(fd);
    }
    // More than the buffer holds: a file that grew since its stat, read as a stream instead.
    return got === undefined ? undefined : use(buffer.subarray(0, got));
  } finally {
    spare.push(buffer);
  }
}

export async function md5File(path: string, size?: number): Promise<string> {
  const whole = await withWhole(path, size, (bytes) => hash('md5', bytes, 'hex'));
  if (whole !== undefined) return whole;
  const md5 = createHash('md5');
  for await (const chunk of createReadStream(path)) md5.update(chunk as Buffer);
  return md5.digest('hex');
}

/**
 * MD5 and SHA-256 of a file from one read, and how many bytes that read held: a file rewritten
 * between its stat and this read has the size of the bytes hashed here, never the stat's (a size
 * from one state of the file and hashes from another made a version no pull could read).
 */
export async function hashFile(path: string, size?: number): Promise<{ md5: string; sha256: string; bytes: number }> {
  const whole = await withWhole(path, size, (bytes) => ({
    md5: hash('md5', bytes, 'hex'),
    sha256: hash('sha256', bytes, 'hex'),
    bytes: bytes.length,
  }));
  if (whole !== undefined) return whole;
  const md5 = createHash('md5');
  const sha = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    md5.update(chunk as Buffer);
    sha.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { md5: md5.digest('hex'), sha256: sha.digest('hex'), bytes };
}
