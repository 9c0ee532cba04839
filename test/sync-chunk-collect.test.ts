// A long read that makes little else besides (whole packs of which a pull keeps a few contents)
// must not let the buffers it is read in pile up until V8 collects for their own sake (32 MiB):
// a real HTTP body of 48 MiB, streamed to a file as a whole-object download is.
import { once } from 'node:events';
import { statSync } from 'node:fs';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { streamToNewFile } from '../src/sync/scan/stream-file.js';
import { removeScratch, scratch } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

const TOTAL = 48 * 1024 * 1024;
const PIECE = Buffer.alloc(256 * 1024, 7);

describe('buffers a long read arrives in', () => {
  it('are collected as the read goes, not left to pile up', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': TOTAL });
      let sent = 0;
      const more = () => {
        while (sent < TOTAL) {
          sent += PIECE.length;
          if (!res.write(PIECE)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const response = (await new Promise((ok, fail) => get(`http://127.0.0.1:${port}/`, ok).on('error', fail))) as AsyncIterable<Buffer>;
      const start = process.memoryUsage().arrayBuffers;
      let peak = 0;
      async function* watched(): AsyncGenerator<Buffer> {
        for await (const chunk of response) {
          peak = Math.max(peak, process.memoryUsage().arrayBuffers - start);
          yield chunk;
        }
      }
      const dest = join(scratch('chunks'), 'body');
      const got = await streamToNewFile(watched(), dest);
      expect(got.bytes).toBe(TOTAL);
      expect(statSync(dest).size).toBe(TOTAL);
      // 2 MiB between collections, and what the socket holds ahead of the reader.
      expect(peak).toBeLessThan(12 * 1024 * 1024);
    } finally {
      server.close();
    }
  });
});
