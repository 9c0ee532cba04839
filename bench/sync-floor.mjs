// The floor under issue 20's memory target: the I/O of a sync at its leanest, in a bare Node.js
// program with none of atlas (no CLI, no AWS SDK, no state file, no entries but the paths a
// manifest must list). bench/sync.mjs runs it against its own S3 server after atlas's phases and
// prints its peak RSS beside atlas's: what Node.js itself needs to move the same bytes.
//   node bench/sync-floor.mjs idle                                   Node.js starting and ending
//   node bench/sync-floor.mjs push PORT BUCKET PREFIX ROOT           read, hash and PUT ROOT's files in packs
//   node bench/sync-floor.mjs pull PORT BUCKET PREFIX DEST SIZE      GET every object under PREFIX, as files of SIZE bytes
// The server is S3 on 127.0.0.1:PORT that takes unsigned requests (s3rver, moto).
import { hash } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readSync, writeSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';

const [mode, port, bucket, prefix, dir, size] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/**
 * One request; its answer's body as text when `text`, else drained. Sent again (up to 3 times) when
 * the server closed a kept-alive connection as it was reused (ECONNRESET, EPIPE).
 */
function request(method, path, options) {
  return again(() => requestOnce(method, path, options));
}

async function again(send, tries = 3) {
  try {
    return await send();
  } catch (error) {
    if (tries <= 1 || !['ECONNRESET', 'EPIPE'].includes(error.code)) throw error;
    return again(send, tries - 1);
  }
}

function requestOnce(method, path, { body, headers = {}, text = false } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: Number(port), method, path, agent, headers }, async (res) => {
      let out = '';
      try {
        for await (const chunk of res) if (text) out += chunk;
      } catch (error) {
        return reject(error);
      }
      if (res.statusCode >= 300) reject(new Error(`${method} ${path}: ${res.statusCode}`));
      else resolve(out);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A push's work: every file read (one folder at a time, in path order), its MD5 and SHA-256, ~4 MiB packs PUT 3 at a time from 3 slabs used again. */
async function push() {
  const paths = []; // what a manifest must list, and all this program keeps
  const walk = (rel) => {
    for (const d of readdirSync(join(dir, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(path);
      else if (d.isFile() && d.name !== '.sandbox-state') paths.push(path);
    }
  };
  walk('');
  const slabs = [];
  let next = 0;
  await Promise.all(
    [0, 1, 2].map(async () => {
      while (next < paths.length) {
        const slab = slabs.pop() ?? Buffer.allocUnsafeSlow(5 << 20);
        let at = 0;
        while (next < paths.length && at < 4 << 20) {
          const fd = openSync(join(dir, paths[next++]), 'r');
          const n = Math.min(fstatSync(fd).size, slab.length - at);
          readSync(fd, slab, at, n, 0);
          closeSync(fd);
          hash('md5', slab.subarray(at, at + n));
          hash('sha256', slab.subarray(at, at + n));
          at += n;
        }
        const body = slab.subarray(0, at);
        await request('PUT', `/${bucket}/${prefix}${hash('sha256', body)}`, { body, headers: { 'content-length': String(at) } });
        slabs.push(slab);
      }
    }),
  );
}

/** A pull's work: every object under the prefix in ranged GETs of 2 MiB, 4 at a time into buffers used again, cut into new files of `size` bytes. */
async function pull() {
  const spans = [];
  let token;
  do {
    const page = await request(
      'GET',
      `/${bucket}?list-type=2&prefix=${encodeURIComponent(prefix)}${token ? `&continuation-token=${encodeURIComponent(token)}` : ''}`,
      { text: true },
    );
    for (const m of page.matchAll(/<Key>([^<]+)<\/Key>.*?<Size>(\d+)<\/Size>/g)) {
      for (let at = 0; at < Number(m[2]); at += 2 << 20) spans.push({ key: m[1], start: at, end: Math.min(Number(m[2]), at + (2 << 20)) });
    }
    token = /<NextContinuationToken>([^<]+)</.exec(page)?.[1];
  } while (token);
  mkdirSync(dir, { recursive: true });
  const buffers = [];
  const fileSize = Number(size);
  let files = 0;
  let next = 0;
  await Promise.all(
    [0, 1, 2, 3].map(async () => {
      while (next < spans.length) {
        const { key, start, end } = spans[next++];
        const into = buffers.pop() ?? Buffer.allocUnsafeSlow(2 << 20);
        const got = await again(
          () =>
            new Promise((resolve, reject) => {
              http
                .get(
                  {
                    host: '127.0.0.1',
                    port: Number(port),
                    path: `/${bucket}/${key}`,
                    agent,
                    headers: { range: `bytes=${start}-${end - 1}` },
                  },
                  async (res) => {
                    let at = 0;
                    try {
                      for await (const chunk of res) at += chunk.copy(into, at);
                      resolve(at);
                    } catch (error) {
                      reject(error);
                    }
                  },
                )
                .on('error', reject);
            }),
        );
        for (let at = 0; at < got; at += fileSize) {
          const fd = openSync(join(dir, String(files++)), 'wx');
          writeSync(fd, into, at, Math.min(fileSize, got - at));
          closeSync(fd);
        }
        buffers.push(into);
      }
    }),
  );
}

if (mode === 'push') await push();
else if (mode === 'pull') await pull();
else if (mode !== 'idle') {
  process.stderr.write('usage: sync-floor.mjs idle | push PORT BUCKET PREFIX ROOT | pull PORT BUCKET PREFIX DEST SIZE\n');
  process.exit(2);
}
agent.destroy();
