// syncExport in this process (the CLI's runs are in sync-export.test.ts): a folder store's version
// written to a folder and to an S3 prefix on s3rver, with links, empty folders, a prefix in use,
// a missing version and a destination that is a file.
import { existsSync, mkdirSync, readdirSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncPush } from '../src/sync/operations.js';
import { syncExport } from '../src/sync/transfer/export.js';
import type { S3Server } from './helpers/s3rver.js';
import { listKeys, S3RVER_ENV, startS3rver } from './helpers/s3rver.js';
import { configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

let s3: S3Server;
const saved = { ...process.env };
beforeAll(async () => {
  s3 = await startS3rver('atlas-export-units');
  Object.assign(process.env, S3RVER_ENV, { AWS_EC2_METADATA_DISABLED: 'true' });
}, 60_000);
afterAll(async () => {
  process.env = saved;
  await s3?.stop();
  removeScratch();
});

async function pushed(): Promise<{ deps: Awaited<ReturnType<typeof depsFor>>; version: string }> {
  const home = scratch();
  const config = configWith({ store: join(home, 'store'), s3: { endpoint: s3.endpoint, force_path_style: true } });
  const deps = await depsFor(config, home);
  const src = join(scratch(), 'proj');
  writeTree(src, { 'a.txt': 'alpha', 'sub/b.txt': 'beta' });
  mkdirSync(join(src, 'empty'));
  symlinkSync('a.txt', join(src, 'inside'));
  symlinkSync('/etc/passwd', join(src, 'outside'));
  const result = await syncPush({ root: src, tree: 'proj', workspace: 'proj' }, deps);
  return { deps, version: result.stats.version! };
}

describe('syncExport', () => {
  it('writes a folder with links that stay inside and empty folders; lists the others', async () => {
    const { deps, version } = await pushed();
    const dest = join(scratch(), 'out');
    const result = await syncExport({ tree: 'proj', workspace: 'proj' }, deps, { dest, version });
    expect(result).toMatchObject({ version, files: 2, links: 1, bytes: 9 });
    expect(readTree(dest)).toMatchObject({ 'a.txt': 'alpha', 'sub/b.txt': 'beta' });
    expect(readlinkSync(join(dest, 'inside'))).toBe('a.txt');
    expect(existsSync(join(dest, 'empty'))).toBe(true);
    // A link outside the folder was refused at push or is listed here: never written.
    expect(existsSync(join(dest, 'outside'))).toBe(false);
  });

  it('writes plain objects under an empty S3 prefix, and refuses one in use', async () => {
    const { deps } = await pushed();
    const dest = `s3://${s3.bucket}/units/out`;
    const result = await syncExport({ tree: 'proj', workspace: 'proj' }, deps, { dest });
    expect(result).toMatchObject({ files: 2, links: 0, bytes: 9, dest });
    expect(result.skipped_links).toContain('inside');
    expect((await listKeys(s3, 'units/out/')).sort()).toEqual(['units/out/a.txt', 'units/out/sub/b.txt']);
    await expect(syncExport({ tree: 'proj', workspace: 'proj' }, deps, { dest })).rejects.toThrow(
      /is not empty: an export writes under a prefix that holds no object yet/,
    );
    await expect(syncExport({ tree: 'proj', workspace: 'proj' }, deps, { dest: 's3://Bad_Bucket/x' })).rejects.toThrow(
      /not a valid bucket name/,
    );
  });

  it('refuses a missing version, a destination that is a file or a folder with something in it', async () => {
    const { deps } = await pushed();
    await expect(syncExport({ tree: 'proj', workspace: 'proj' }, deps, { dest: join(scratch(), 'x'), version: '12345' })).rejects.toThrow(
      /version 12345 of proj is not in/,
    );
    const file = join(scratch(), 'file');
    writeFileSync(file, '');
    await expect(syncExport({ tree: 'proj', workspace: 'proj' }, deps, { dest: file })).rejects.toThrow(/is not a folder/);
    const used = scratch();
    writeFileSync(join(used, 'keep.txt'), 'mine');
    await expect(syncExport({ tree: 'proj', workspace: 'proj' }, deps, { dest: used })).rejects.toThrow(/is not empty/);
    expect(readdirSync(used)).toEqual(['keep.txt']);
  });
});
