// A pull that fails leaves the folder as it was (docs/sync.md#pull): every content is staged
// beside its target and checked before any is renamed into place, so a damaged content found late,
// or a connection dropped for good midway, changes no file, deletes none and leaves no temp file or
// new folder. Real pulls from a folder store with a pack damaged on disk, and from s3rver behind a
// proxy that cuts off every answer for one blob.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush } from '../src/sync/operations.js';
import type { FaultProxy } from './helpers/s3-fault-proxy.js';
import { startFaultProxy } from './helpers/s3-fault-proxy.js';
import type { S3Server } from './helpers/s3rver.js';
import { S3RVER_ENV, startS3rver } from './helpers/s3rver.js';
import { blobFiles, configWith, depsFor, folderStoreWorld, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

/** Version 1: 30 files in three folders and one the next version drops. */
const first = () => ({
  ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`d${i % 3}/f${i}.txt`, `one ${i} `.repeat(200)])),
  'gone.txt': 'dropped by version 2',
});
/** Version 2: every file changed, one gone, a new one in new folders. */
const second = () => ({
  ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`d${i % 3}/f${i}.txt`, `two ${i} `.repeat(200)])),
  'new/deep/n.txt': 'new in version 2',
});

/** Every name under `root`, folders and atlas's own files included. */
const everything = (root: string) => readdirSync(root, { recursive: true }).map(String).sort();

describe('a failed pull leaves the folder as it was', () => {
  it('a pack damaged in a folder store: found at its last file, nothing renamed, deleted or left', async () => {
    const w = folderStoreWorld('atlas-atomic-');
    const src = join(w.base, 'src');
    const dest = join(w.base, 'dest');
    writeTree(src, first());
    await syncPush(w.target(src), await w.deps());
    await syncPull(w.target(dest), await w.deps(), {});
    const before = readTree(dest);
    const names = everything(dest);
    const packsBefore = new Set(blobFiles(w.store, 'ws'));
    rmSync(join(src, 'gone.txt'));
    writeTree(src, second());
    await syncPush(w.target(src), await w.deps());
    const pack = blobFiles(w.store, 'ws').find((p) => !packsBefore.has(p))!;
    // The last byte of the pack: every file before it checks, the last one does not.
    const bytes = readFileSync(pack);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
    writeFileSync(pack, bytes);
    await expect(syncPull(w.target(dest), await w.deps(), { force: true })).rejects.toThrow(/does not match its \.sandbox-state/);
    expect(everything(dest)).toEqual(names);
    expect(readTree(dest)).toEqual(before);
  });
});

describe('a connection dropped for good midway (s3rver)', () => {
  let server: S3Server | undefined;
  let proxy: FaultProxy | undefined;
  const savedEnv = { ...process.env };
  beforeAll(async () => {
    server = await startS3rver('atlas-atomic');
    proxy = await startFaultProxy(server.endpoint);
    Object.assign(process.env, S3RVER_ENV, { AWS_EC2_METADATA_DISABLED: 'true' });
  }, 30_000);
  afterAll(async () => {
    process.env = savedEnv;
    await proxy?.stop();
    await server?.stop();
  });

  it('the packed files arrive and check, the large one never does: none of them is renamed into place', async () => {
    const config = configWith({
      store: `s3://${server!.bucket}/atomic`,
      retries: 1,
      s3: { endpoint: proxy!.endpoint, force_path_style: true },
    });
    const base = scratch('atlas-atomic-s3-');
    const deps = () => depsFor(config, join(base, 'home'));
    const target = (root: string) => ({ root, tree: 'ws', workspace: 'ws' });
    const src = join(base, 'src');
    const dest = join(base, 'dest');
    writeTree(src, first());
    await syncPush(target(src), await deps());
    await syncPull(target(dest), await deps(), {});
    const before = readTree(dest);
    const names = everything(dest);
    // A content of its own (over 1 MiB), fetched whole: every answer for it is cut off.
    rmSync(join(src, 'gone.txt'));
    writeTree(src, { ...second(), 'large.bin': Buffer.alloc(1024 * 1024 + 7, 'L') });
    await syncPush(target(src), await deps());
    proxy!.mode = 'cut-blobs';
    const failedBefore = proxy!.failed;
    await expect(syncPull(target(dest), await deps(), { force: true })).rejects.toThrow(/large\.bin|\.blobs/);
    expect(proxy!.failed - failedBefore).toBeGreaterThanOrEqual(2); // asked again (sync.retries 1), cut off again
    proxy!.mode = 'pass';
    expect(everything(dest)).toEqual(names);
    expect(readTree(dest)).toEqual(before);
    // And once the connection holds, the pull finishes the job.
    await syncPull(target(dest), await deps(), { force: true });
    expect(readTree(dest)).toEqual(readTree(src));
  }, 60_000);
});
