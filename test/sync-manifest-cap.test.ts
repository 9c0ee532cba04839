// A manifest's text is capped by its entries (issue 36, item 7): a 4 MB gzipped manifest holding
// 4 GiB of whitespace kept a pull busy for minutes. A state may hold a megabyte around its list
// and 64 KiB an entry; past that the reading stops and the version is damaged, named.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import { parseReading } from '../src/sync/scan/local-state.js';
import { folderStoreWorld, readTree, removeScratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

/** `size` characters of whitespace in 1 MiB pieces, made as they are read (never held whole). */
async function* spaces(size: number, then = ''): AsyncGenerator<string> {
  const piece = ' '.repeat(1024 * 1024);
  for (let sent = 0; sent < size; sent += piece.length) yield piece;
  if (then) yield then;
}

describe('manifest text cap', () => {
  it('4 GiB of whitespace is refused after the first megabytes, in the streaming and the whole reading', async () => {
    let reads = 0;
    let pieces = 0;
    const counted = async function* () {
      for await (const p of spaces(4 * 1024 ** 3, '{"version":"1.0","last_synced_at":1,"files":[]}')) {
        pieces++;
        yield p;
      }
    };
    const parsed = await parseReading(async () => {
      reads++;
      return counted();
    }, {});
    expect(parsed).toMatchObject({ ok: false, kind: 'corrupt', problem: expect.stringMatching(/for 0 entries .*not a state atlas wrote/) });
    expect(reads).toBe(2);
    expect(pieces).toBeLessThan(8);
  });

  it('a stored version padded with 48 MiB of whitespace is damaged, named, and no pull writes from it; a pretty-printed one still pulls', async () => {
    const { base, store, target, deps } = folderStoreWorld('atlas-manifest-cap-');
    const src = join(base, 'src');
    writeTree(src, { 'a.txt': 'a', 'b/c.txt': 'c' });
    await syncPush(target(src), await deps());
    const [version] = readdirSync(join(store, 'ws')).filter((n) => /^\d+$/.test(n));
    const manifest = join(store, 'ws', version!, '.sandbox-state');
    const original = readFileSync(manifest, 'utf8');

    writeFileSync(manifest, JSON.stringify(JSON.parse(original), null, 2));
    await syncPull(target(join(base, 'pretty')), await deps(), {});
    expect(readTree(join(base, 'pretty'))).toEqual({ 'a.txt': 'a', 'b/c.txt': 'c' });

    writeFileSync(manifest, `${' '.repeat(48 * 1024 * 1024)}${original}`);
    await expect(syncPull(target(join(base, 'dest')), await deps(), {})).rejects.toThrow(
      new RegExp(`version ${version} of ws .*longer than .* for 0 entries`),
    );
    const listed = await syncVersions(target(src), await deps());
    expect(listed.versions.find((v) => v.version === version)).toMatchObject({
      status: 'damaged',
      problem: expect.stringMatching(/not a state atlas wrote/),
    });
  });
});
