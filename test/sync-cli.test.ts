// The sync commands as people run them (the built CLI, real processes): --json output and exit
// codes, a pull killed midway then run again, two pulls at once, and a task that crashed on one
// machine, pushed, then fetched and recovered under another ATLAS_HOME and clone, where its
// receipts still verify with the first machine's xpub.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { ensureBuilt, ROOT } from './helpers/engine-fixtures.js';
import type { S3Server } from './helpers/s3rver.js';
import { S3RVER_ENV, startS3rver } from './helpers/s3rver.js';
import { readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

const CLI = join(ROOT, 'bin', 'atlas.cjs');
let server: S3Server;

beforeAll(async () => {
  ensureBuilt();
  server = await startS3rver('atlas-cli');
}, 120_000);
afterAll(async () => {
  await server?.stop();
  removeScratch();
});

const dir = scratch;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function baseEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ATLAS_HOME: home, AWS_EC2_METADATA_DISABLED: 'true', ...extra };
  delete env['ATLAS_XPUB'];
  return env;
}

function atlas(args: string[], options: { home: string; cwd?: string; env?: Record<string, string> }): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd ?? ROOT, env: baseEnv(options.home, options.env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

/** Runs the CLI and kills it (SIGKILL) once `count` reaches 20; checks it was stopped midway of `total`. */
async function killMidway(args: string[], env: NodeJS.ProcessEnv, count: () => number, total: number, atLeast = 20): Promise<number> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: 'ignore' });
  const deadline = Date.now() + 30_000;
  while (count() < atLeast && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  child.kill('SIGKILL');
  await new Promise((r) => child.once('close', r));
  const atKill = count();
  expect(atKill).toBeGreaterThanOrEqual(atLeast);
  expect(atKill).toBeLessThan(total);
  return atKill;
}

const s3Env = (prefix: string) => ({
  ...S3RVER_ENV,
  ATLAS_SYNC_STORE: `s3://${server.bucket}/${prefix}`,
  ATLAS_SYNC_S3_ENDPOINT: server.endpoint,
  ATLAS_SYNC_S3_FORCE_PATH_STYLE: 'true',
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

describe('atlas sync (CLI)', () => {
  it('push, status, versions and pull print SyncStats as JSON; bad input exits 2', async () => {
    const home = dir('atlas-home-');
    const src = dir();
    writeTree(src, { 'a.txt': 'alpha', 'b/c.txt': 'gamma' });
    const push = await atlas(['sync', 'push', '--dir', src, '--workspace', 'cli-ws', '--json'], { home });
    expect(push.code).toBe(0);
    const pushed = JSON.parse(push.stdout) as { stats: Record<string, unknown>; location: string };
    expect(pushed.location).toBe(join(home, 'store'));
    expect(pushed.stats).toMatchObject({ direction: 'push', files_uploaded: 2, bytes_transferred: 10, duration_ms: expect.any(Number) });
    const versions = JSON.parse((await atlas(['sync', 'versions', '--dir', src, '--workspace', 'cli-ws', '--json'], { home })).stdout) as {
      versions: { version: string }[];
    };
    expect(versions.versions.map((v) => v.version)).toEqual([pushed.stats['version']]);
    const dest = dir();
    const status = await atlas(['sync', 'status', '--dir', dest, '--workspace', 'cli-ws'], { home });
    expect(status.stdout).toMatch(/pull\s+download 2 file\(s\)/);
    const pull = await atlas(['sync', 'pull', '--dir', dest, '--workspace', 'cli-ws'], { home });
    expect(pull.code).toBe(0);
    expect(pull.stdout).toMatch(/pulled version \d+ .*\n\s+downloaded 2, deleted 0, skipped 0/);
    expect(readTree(dest)).toEqual(readTree(src));
    expect((await atlas(['sync', 'pull', '--dir', dest, '--version', 'latest'], { home })).code).toBe(2);
    expect((await atlas(['sync', 'push', '--dir', src, '--task', 'task-20260101-000000'], { home })).code).toBe(2);
    expect((await atlas(['sync', 'push', '--dir', src, '--workspace', '../up'], { home })).code).toBe(2);
    const noTask = await atlas(['sync', 'push'], { home, cwd: src });
    expect(noTask.code).toBe(4);
    expect(noTask.stderr).toMatch(/hint: pass --task ID/);
  }, 30_000);

  it('versions, prune and export take --workspace alone, outside any folder or task; push, pull and status refuse it without --dir', async () => {
    const home = dir('atlas-home-');
    const src = dir();
    const elsewhere = dir();
    writeTree(src, { 'a.txt': 'one' });
    expect((await atlas(['sync', 'push', '--dir', src, '--workspace', 'named'], { home })).code).toBe(0);
    writeTree(src, { 'a.txt': 'two' });
    expect((await atlas(['sync', 'push', '--dir', src, '--workspace', 'named'], { home })).code).toBe(0);
    // Run where there is no task and nothing of the workspace's: that folder is neither read nor locked.
    const versions = await atlas(['sync', 'versions', '--workspace', 'named', '--json'], { home, cwd: elsewhere });
    expect(versions.code).toBe(0);
    expect((JSON.parse(versions.stdout) as { versions: unknown[] }).versions).toHaveLength(2);
    const pruned = await atlas(['sync', 'prune', '--workspace', 'named', '--keep', '1', '--json'], { home, cwd: elsewhere });
    expect(pruned.code).toBe(0);
    expect(JSON.parse(pruned.stdout)).toMatchObject({ workspace: 'named', removed: { versions: 1 } });
    const out = join(dir(), 'out');
    expect((await atlas(['sync', 'export', '--workspace', 'named', out], { home, cwd: elsewhere })).code).toBe(0);
    expect(readFileSync(join(out, 'a.txt'), 'utf8')).toBe('two');
    expect(readdirSync(elsewhere)).toEqual([]);
    for (const command of ['push', 'pull', 'status']) {
      const refused = await atlas(['sync', command, '--workspace', 'named'], { home, cwd: elsewhere });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('pass the folder too, with --dir PATH');
    }
    expect((await atlas(['sync', 'versions', '--workspace', 'named', '--task', 'task-20260101-000000'], { home })).stderr).toContain(
      '--workspace goes with --dir',
    );
    expect((await atlas(['sync', 'versions', '--workspace', '../up'], { home, cwd: elsewhere })).code).toBe(2);
  }, 30_000);

  it('a pull killed midway changed nothing; run again, it removes the temp files left and converges', async () => {
    const home = dir('atlas-home-');
    const env = s3Env('kill');
    const src = dir();
    writeTree(src, Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`d${i % 8}/file-${i}.txt`, `content ${i} `.repeat(100)])));
    expect((await atlas(['sync', 'push', '--dir', src, '--workspace', 'kill'], { home, env })).code).toBe(0);
    const dest = dir();
    const names = () => readdirSync(dest, { recursive: true }).map(String);
    // Killed while it stages: files beside their targets under temp names, none renamed yet.
    const staged = () => names().filter((n) => /\.sandbox-state\.tmp\.\d+-\d+$/.test(n)).length;
    await killMidway(['sync', 'pull', '--dir', dest, '--workspace', 'kill'], baseEnv(home, env), staged, 300);
    expect(names().filter((n) => n.endsWith('.txt'))).toEqual([]);
    const state = parseWhole(readFileSync(join(dest, '.sandbox-state'), 'utf8'));
    expect(state.ok && state.state.last_synced_at).toBe(0); // marked unfinished: never taken as fresh
    const again = await atlas(['sync', 'pull', '--dir', dest, '--workspace', 'kill', '--json'], { home, env });
    expect(again.code).toBe(0);
    const stats = (JSON.parse(again.stdout) as { stats: { files_downloaded: number; files_skipped: number } }).stats;
    expect(stats.files_downloaded).toBe(300);
    expect(readTree(dest)).toEqual(readTree(src));
    expect(staged()).toBe(0);
    expect(existsSync(join(dest, '.sandbox-state.tmp'))).toBe(false);
  }, 60_000);

  it('a push killed midway leaves nothing a reader sees; the next push reuses what it had sent', async () => {
    const home = dir('atlas-home-');
    const src = dir();
    // 400 files of about 100 KB: packs of 4 MiB hold about 40 each, 10 packs in all.
    writeTree(
      src,
      Object.fromEntries(
        Array.from({ length: 400 }, (_, i) => [`d${i % 8}/file-${i}.txt`, `content ${String(i).padStart(3)} `.repeat(8000)]),
      ),
    );
    const blobs = join(home, 'store', 'killed', '.blobs');
    const count = () =>
      existsSync(blobs) ? readdirSync(blobs, { recursive: true }).filter((n) => /[0-9a-f]{64}$/.test(String(n))).length : 0;
    const atKill = await killMidway(['sync', 'push', '--dir', src, '--workspace', 'killed'], baseEnv(home), count, 10, 2);
    const versions = await atlas(['sync', 'versions', '--dir', src, '--workspace', 'killed', '--json'], { home });
    expect((JSON.parse(versions.stdout) as { versions: unknown[] }).versions).toEqual([]);
    const again = await atlas(['sync', 'push', '--dir', src, '--workspace', 'killed', '--json'], { home });
    expect(again.code).toBe(0);
    const stats = (JSON.parse(again.stdout) as { stats: { files_uploaded: number; files_reused: number } }).stats;
    expect(stats.files_uploaded + stats.files_reused).toBe(400);
    // The same contents make the same packs: those the killed push had sent are found, not sent again.
    expect(stats.files_reused).toBeGreaterThanOrEqual(atKill * 40);
    const dest = dir();
    expect((await atlas(['sync', 'pull', '--dir', dest, '--workspace', 'killed'], { home })).code).toBe(0);
    expect(readTree(dest)).toEqual(readTree(src));
  }, 60_000);

  it('two pulls of one folder at once both succeed, one after the other', async () => {
    const home = dir('atlas-home-');
    const env = s3Env('twice');
    const src = dir();
    writeTree(src, Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`f${i}.txt`, `${i}`])));
    const push = await atlas(['sync', 'push', '--dir', src, '--workspace', 'twice'], { home, env });
    // Nothing but atlas's own lines: no warning of the SDK's (a lock is an empty object of a stated length).
    expect(push).toMatchObject({ code: 0, stderr: '' });
    const dest = dir();
    const both = await Promise.all(
      [0, 1].map(() => atlas(['sync', 'pull', '--dir', dest, '--workspace', 'twice', '--json'], { home, env })),
    );
    expect(both.map((r) => r.code)).toEqual([0, 0]);
    const downloaded = both
      .map((r) => (JSON.parse(r.stdout) as { stats: { files_downloaded: number } }).stats.files_downloaded)
      .sort((a, b) => a - b);
    expect(downloaded).toEqual([0, 60]);
    expect(readTree(dest)).toEqual(readTree(src));
  }, 30_000);

  it('moves a crashed task to another ATLAS_HOME and clone, recovers it there, and its receipts verify', async () => {
    const base = dir('atlas-move-');
    const homeA = join(base, 'homeA');
    const homeB = join(base, 'homeB');
    const env = s3Env('move');
    const repoA = join(base, 'repoA');
    execFileSync('git', ['init', '-q', '-b', 'main', repoA]);
    git(repoA, 'config', 'user.email', 'dev@example.com');
    git(repoA, 'config', 'user.name', 'Dev');
    writeTree(repoA, {
      'README.md': '# demo\n',
      '.atlas/templates/move.yaml': [
        'name: move',
        'description: validate, then work',
        'branch_prefix: move/',
        'steps:',
        '  - name: validate',
        '    type: validation',
        '    commands: ["echo validated"]',
        '  - name: work',
        '    type: command',
        '    idempotent: true',
        '    run: ["sh -c \'echo work >> work.txt; sleep ${ATLAS_TEST_SLEEP:-0}\'"]',
        '',
      ].join('\n'),
    });
    git(repoA, 'add', '-A');
    git(repoA, 'commit', '-q', '-m', 'initial');
    // Machine A: the task validates (a signed receipt), then crashes in its second step.
    const start = spawn(process.execPath, [CLI, 'start', 'move', 'move me', '--no-interactive'], {
      cwd: repoA,
      env: baseEnv(homeA, { ...env, ATLAS_TEST_SLEEP: '30' }),
      stdio: 'ignore',
    });
    const worktreeA = join(homeA, 'workspaces', 'move-me', 'worktree');
    const deadline = Date.now() + 30_000;
    while (!existsSync(join(worktreeA, 'work.txt')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    start.kill('SIGKILL');
    await new Promise((r) => start.once('close', r));
    const taskId = readdirSync(join(homeA, 'workspaces', 'move-me', 'tasks'))[0]!;
    const owner = JSON.parse(readFileSync(join(homeA, 'workspaces', 'move-me', 'tasks', taskId, 'owner.json'), 'utf8')) as {
      process_groups?: { pid: number }[];
    };
    for (const g of owner.process_groups ?? []) {
      try {
        process.kill(-g.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    writeFileSync(join(worktreeA, 'notes.txt'), 'uncommitted work on A\n');
    const push = await atlas(['sync', 'push', '--task', taskId, '--json'], { home: homeA, cwd: repoA, env });
    expect(push.code).toBe(0);
    expect(JSON.parse(push.stdout)).toMatchObject({ task: { id: taskId, stats: { files_uploaded: expect.any(Number) } } });
    // Machine B: a clone and an empty ATLAS_HOME.
    const repoB = join(base, 'repoB');
    execFileSync('git', ['clone', '-q', repoA, repoB]);
    const recover = await atlas(['recover', '--from-store', '--yes'], { home: homeB, cwd: repoB, env });
    expect(recover.stderr).not.toMatch(/unexpected|no task|holds/);
    expect(recover.code).toBe(0);
    expect(recover.stdout).toMatch(new RegExp(`fetched task ${taskId} \\(workspace move-me\\)`));
    const worktreeB = join(homeB, 'workspaces', 'move-me', 'worktree');
    expect(readFileSync(join(worktreeB, 'notes.txt'), 'utf8')).toBe('uncommitted work on A\n');
    expect(readFileSync(join(worktreeB, 'work.txt'), 'utf8')).toBe('work\nwork\n');
    expect(git(worktreeB, 'branch', '--show-current')).toBe('move/move-me');
    const task = JSON.parse(readFileSync(join(homeB, 'workspaces', 'move-me', 'tasks', taskId, 'task.json'), 'utf8')) as {
      repo_root: string;
      worktree: string;
      status: string;
    };
    expect(task).toMatchObject({ repo_root: repoB, worktree: worktreeB, status: 'completed' });
    expect(existsSync(join(homeB, 'workspaces', 'move-me', 'tasks', taskId, 'owner.json'))).toBe(false);
    const xpub = readFileSync(join(homeA, 'keys', 'account.xpub'), 'utf8').trim();
    const verify = await atlas(['verify', taskId, '--xpub', xpub, '--require-step', 'validate'], { home: homeB, cwd: repoB });
    expect(verify.stderr).toBe('');
    expect(verify.code).toBe(0);
    const again = await atlas(['recover', '--from-store', taskId], { home: homeB, cwd: repoB, env });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already in/);
  }, 90_000);
});
