// Nanosecond mtimes (issue 36, rsync -a fidelity): a version records a file's and a link's time to
// the nanosecond where the file system has it (`mtime_ns`, optional: older manifests lack it and
// still pull), and a pull sets it to the microsecond, all Node.js can set (its utimes takes a
// double and keeps microseconds; nothing in Node sets nanoseconds). Before, times were whole seconds.
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { entryTime } from '../src/domain/sync-time.js';
import { syncPull, syncPush } from '../src/sync/operations.js';
import { folderStoreWorld, removeScratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

const ns = (path: string) => lstatSync(path, { bigint: true }).mtimeNs;

describe('nanosecond mtimes', () => {
  it('are recorded exactly and come back to the microsecond; an old manifest without them pulls', async () => {
    const { base, store, target, deps } = folderStoreWorld('atlas-mtime-ns-', 7200);
    const src = join(base, 'src');
    writeTree(src, { 'a.txt': 'a', 'b.txt': 'b' });
    symlinkSync('a.txt', join(src, 'link'));
    // touch sets nanoseconds (utimensat), which Node cannot.
    execFileSync('touch', ['-m', '-d', '@1600000000.123456789', join(src, 'a.txt')]);
    execFileSync('touch', ['-h', '-m', '-d', '@1600000001.987654321', join(src, 'link')]);
    expect(ns(join(src, 'a.txt'))).toBe(1_600_000_000_123_456_789n);
    await syncPush(target(src), await deps());

    const [version] = readdirSync(join(store, 'ws')).filter((n) => /^\d+$/.test(n));
    const manifest = join(store, 'ws', version!, '.sandbox-state');
    const parsed = parseWhole(readFileSync(manifest, 'utf8'));
    expect(parsed.ok).toBe(true);
    const files = parsed.ok ? parsed.state.files : [];
    expect(files.find((f) => f.path === 'a.txt')).toMatchObject({ modified_at: 1_600_000_000, mtime_ns: 123_456_789 });
    expect(files.find((f) => f.path === 'link')).toMatchObject({ modified_at: 1_600_000_001, mtime_ns: 987_654_321 });

    const dest = join(base, 'dest');
    await syncPull(target(dest), await deps(), {});
    expect(ns(join(dest, 'a.txt'))).toBe(1_600_000_000_123_456_000n);
    expect(ns(join(dest, 'link'))).toBe(1_600_000_001_987_654_000n);

    // A manifest of an older atlas (no mtime_ns) pulls, whole seconds; a bad one is refused.
    const state = JSON.parse(readFileSync(manifest, 'utf8')) as { files: Record<string, unknown>[] };
    for (const f of state.files) delete f['mtime_ns'];
    writeFileSync(manifest, JSON.stringify(state));
    const old = join(base, 'old');
    await syncPull(target(old), await deps(), {});
    expect(statSync(join(old, 'a.txt')).mtimeMs).toBe(1_600_000_000_000);
    state.files[0]!['mtime_ns'] = 1_000_000_000;
    writeFileSync(manifest, JSON.stringify(state));
    await expect(syncPull(target(join(base, 'bad')), await deps(), {})).rejects.toThrow(/mtime_ns is not nanoseconds of a second/);
  });

  it('entryTime lands on the stored microsecond for any time', () => {
    const at = join(folderStoreWorld('atlas-mtime-us-').base, 'f');
    writeFileSync(at, 'x');
    for (let i = 0; i < 500; i++) {
      const entry = { modified_at: 1_700_000_000 + i * 7_919_113, mtime_ns: (i * 104_729_123) % 1e9 };
      const t = entryTime(entry);
      utimesSync(at, t, t);
      expect(ns(at)).toBe(BigInt(entry.modified_at) * 1_000_000_000n + BigInt(Math.floor(entry.mtime_ns / 1000) * 1000));
    }
  });
});
