// `atlas sync export` as people run it (the built CLI, real processes): a stored version written
// out as an ordinary folder (no .sandbox-state, modes, links and empty folders kept), from a
// folder store and from S3 (s3rver and moto on 127.0.0.1); a folder that is not empty is refused;
// to an S3 prefix as plain objects (links listed, not written), never into a prefix in use.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from './helpers/engine-fixtures.js';
import { motoMissing, startMoto } from './helpers/moto.js';
import type { S3Server } from './helpers/s3rver.js';
import { listKeys, S3RVER_ENV, s3rverClient, startS3rver } from './helpers/s3rver.js';
import { readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

const CLI = join(ROOT, 'bin', 'atlas.cjs');
let server: S3Server;
let moto: S3Server | undefined;

beforeAll(async () => {
  ensureBuilt();
  server = await startS3rver('atlas-export');
  if (!motoMissing()) moto = await startMoto('atlas-export');
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await moto?.stop();
  removeScratch();
});

function atlas(args: string[], home: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ATLAS_HOME: home, AWS_EC2_METADATA_DISABLED: 'true', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

describe('atlas sync export', () => {
  for (const kind of ['folder', 's3rver', 'moto'] as const) {
    it.skipIf(kind === 'moto' && motoMissing() !== undefined)(
      `writes a version as an ordinary folder (${kind} store)`,
      async () => {
        const home = scratch();
        const s3 = kind === 's3rver' ? server : kind === 'moto' ? moto! : undefined;
        const env: Record<string, string> = s3
          ? {
              ...S3RVER_ENV,
              ATLAS_SYNC_STORE: `s3://${s3.bucket}/x`,
              ATLAS_SYNC_S3_ENDPOINT: s3.endpoint,
              ATLAS_SYNC_S3_FORCE_PATH_STYLE: 'true',
            }
          : {};
        const src = join(scratch(), 'proj');
        writeTree(src, { 'run.sh': 'echo', 'a.txt': 'first' });
        chmodSync(join(src, 'run.sh'), 0o755);
        mkdirSync(join(src, 'empty'));
        symlinkSync('a.txt', join(src, 'link'));
        const first = await atlas(['sync', 'push', '--dir', src, '--json'], home, env);
        expect(first.code).toBe(0);
        const v1 = (JSON.parse(first.stdout) as { stats: { version: string } }).stats.version;
        writeFileSync(join(src, 'a.txt'), 'second');
        expect((await atlas(['sync', 'push', '--dir', src], home, env)).code).toBe(0);
        const dest = join(scratch(), 'out');
        const exported = await atlas(['sync', 'export', '--workspace', 'proj', '--version', v1, dest], home, env);
        expect(exported.stderr).toBe('');
        expect(exported.stdout).toMatch(new RegExp(`^exported version ${v1} of proj .* to ${dest}\\n  2 file\\(s\\), 1 link\\(s\\), 9 B`));
        expect(readdirSync(dest).sort()).toEqual(['a.txt', 'empty', 'link', 'run.sh']);
        expect(readTree(dest, { all: true })).toMatchObject({ 'a.txt': 'first', 'run.sh': 'echo' });
        expect(statSync(join(dest, 'run.sh')).mode & 0o777).toBe(0o755);
        expect(readlinkSync(join(dest, 'link'))).toBe('a.txt');
        // The newest by default, as JSON; a folder that is not empty is refused (exit 2), untouched.
        const newest = await atlas(['sync', 'export', '--dir', src, join(scratch(), 'n'), '--json'], home, env);
        expect(JSON.parse(newest.stdout)).toMatchObject({ workspace: 'proj', files: 2, links: 1, bytes: 10 });
        const refused = await atlas(['sync', 'export', '--workspace', 'proj', dest], home, env);
        expect(refused.code).toBe(2);
        expect(refused.stderr).toMatch(/is not empty: an export writes into a new or empty folder only/);
        const missing = await atlas(['sync', 'export', '--workspace', 'proj', '--version', '12345', join(scratch(), 'm')], home, env);
        expect(missing.code).toBe(4);
        expect(existsSync(join(dest, '.sandbox-state'))).toBe(false);
      },
      60_000,
    );
  }

  for (const kind of ['s3rver', 'moto'] as const) {
    it.skipIf(kind === 'moto' && motoMissing() !== undefined)(
      `writes a version as plain objects under an S3 prefix (${kind})`,
      async () => {
        const home = scratch();
        const s3 = kind === 's3rver' ? server : moto!;
        // The store is a folder; the destination a bucket reached with sync.s3's settings.
        const env: Record<string, string> = { ...S3RVER_ENV, ATLAS_SYNC_S3_ENDPOINT: s3.endpoint, ATLAS_SYNC_S3_FORCE_PATH_STYLE: 'true' };
        const src = join(scratch(), 'site');
        writeTree(src, { 'index.html': '<p>hi</p>', 'css/a b;#?.css': 'body{}' });
        symlinkSync('index.html', join(src, 'home.html'));
        expect((await atlas(['sync', 'push', '--dir', src], home, env)).code).toBe(0);
        const dest = `s3://${s3.bucket}/exports/${kind}`;
        const exported = await atlas(['sync', 'export', '--workspace', 'site', dest], home, env);
        expect(exported.stderr).toBe('');
        expect(exported.code).toBe(0);
        expect(exported.stdout).toContain(`to ${dest}\n  2 file(s), 0 link(s), 15 B`);
        expect(exported.stdout).toContain('1 link(s) not written (S3 holds no links): home.html');
        expect((await listKeys(s3, `exports/${kind}/`)).sort()).toEqual([`exports/${kind}/css/a b;#?.css`, `exports/${kind}/index.html`]);
        const body = await s3rverClient(s3).send(new GetObjectCommand({ Bucket: s3.bucket, Key: `exports/${kind}/css/a b;#?.css` }));
        expect(await body.Body!.transformToString()).toBe('body{}');
        // A prefix that holds anything is refused, and nothing is written there.
        const again = await atlas(['sync', 'export', '--workspace', 'site', dest], home, env);
        expect(again.code).toBe(2);
        expect(again.stderr).toMatch(/is not empty: an export writes under a prefix that holds no object yet/);
        expect(await listKeys(s3, `exports/${kind}/`)).toHaveLength(2);
        const bad = await atlas(['sync', 'export', '--workspace', 'site', 's3://Not_A_Bucket/x'], home, env);
        expect(bad.code).toBe(2);
        expect(bad.stderr).toMatch(/not a valid bucket name/);
        const absent = await atlas(['sync', 'export', '--workspace', 'site', 's3://no-such-bucket/x'], home, env);
        expect(absent.code).not.toBe(0);
        expect(absent.stderr).toMatch(/s3:\/\/no-such-bucket\/x/);
      },
      60_000,
    );
  }
});
