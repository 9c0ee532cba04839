// owner.json claims (src/liveness/claim.ts): a free name is taken by creating the record whole
// only if the name is still free (create-whole.ts), so of several processes racing for it exactly
// one gets it; a live holder is refused, a gone one or a torn record taken over under the lock.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claimOwner } from '../src/liveness/claim.js';
import { ownerRecordForThisProcess, readOwner } from '../src/liveness/owner.js';
import { createFileWhole, linkRefused } from '../src/store/create-whole.js';
import { compileFixture } from './helpers/compile-fixture.js';
import { tempDir } from './helpers/core-fixtures.js';

const settings = { heartbeatIntervalMs: 60_000, staleThresholdMs: 300_000 };
let fixture: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  fixture = await compileFixture('test/fixtures/claim-owner.ts');
});
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

describe('claimOwner', () => {
  it('takes a free name with a whole, private record and leaves no temp file; a second claim while it is held is refused', async () => {
    const dir = tempDir();
    const path = join(dir, 'owner.json');
    const claim = await claimOwner(path, settings);
    expect(claim).toMatchObject({ ok: true, previous: undefined });
    expect(readOwner(path)?.pid).toBe(process.pid);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['owner.json']);
    const again = await claimOwner(path, settings);
    expect(again.ok).toBe(false);
    if (!again.ok) expect(again.holder).toMatchObject({ status: 'alive', owner: { pid: process.pid } });
    expect(readdirSync(dir).filter((n) => n !== 'owner.json.lock')).toEqual(['owner.json']);
  });

  it("takes over a gone owner's record (saying whose it was) and a torn one", async () => {
    const dir = tempDir();
    const path = join(dir, 'owner.json');
    const exited = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const gone = { ...ownerRecordForThisProcess(settings), pid: Number(exited.stdout), process_start: 'linux:gone:1' };
    writeFileSync(path, JSON.stringify(gone));
    const claim = await claimOwner(path, settings);
    expect(claim).toMatchObject({ ok: true, previous: { pid: gone.pid } });
    expect(readOwner(path)?.pid).toBe(process.pid);
    writeFileSync(path, '{"pid": 1');
    expect(await claimOwner(path, settings)).toMatchObject({ ok: true, previous: undefined });
    expect(readOwner(path)?.pid).toBe(process.pid);
  });

  it('of eight processes claiming a free name at once, exactly one gets it and the others are told who', async () => {
    const dir = tempDir();
    const path = join(dir, 'owner.json');
    const go = join(dir, 'go');
    const answers = Array.from({ length: 8 }, () => {
      const child = spawn(process.execPath, [fixture, path, go], { stdio: ['pipe', 'pipe', 'inherit'] });
      children.push(child);
      return new Promise<{ pid: number; said: string }>((resolve) => {
        let out = '';
        child.stdout!.on('data', (d) => {
          out += d;
          if (out.endsWith('\n')) resolve({ pid: child.pid!, said: out.trim() });
        });
      });
    });
    writeFileSync(go, '');
    const said = await Promise.all(answers);
    const winners = said.filter((s) => s.said === 'ok');
    expect(winners).toHaveLength(1);
    expect(readOwner(path)?.pid).toBe(winners[0]!.pid);
    for (const s of said.filter((x) => x.said !== 'ok')) expect(s.said).toBe(`held by ${winners[0]!.pid}`);
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });
});

describe('createFileWhole', () => {
  it('creates once, says when the name is taken (the file kept as it was), and fails on a missing folder', async () => {
    const dir = tempDir();
    const path = join(dir, 'f.json');
    expect(await createFileWhole(path, 'first')).toBe('created');
    expect(await createFileWhole(path, 'second')).toBe('exists');
    expect(readdirSync(dir)).toEqual(['f.json']);
    expect(spawnSync('cat', [path], { encoding: 'utf8' }).stdout).toBe('first');
    await expect(createFileWhole(join(dir, 'missing', 'f.json'), 'x')).rejects.toThrow(/ENOENT/);
  });

  it('reads a refused link: taken, no hard links on this file system (the claim then takes the lock), or a real failure', () => {
    expect(linkRefused('EEXIST')).toBe('exists');
    for (const code of ['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EMLINK']) expect(linkRefused(code)).toBe('unsupported');
    expect(linkRefused('EIO')).toBeUndefined();
    expect(linkRefused(undefined)).toBeUndefined();
  });
});
