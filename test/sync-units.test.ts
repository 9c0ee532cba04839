// In-process: fetching a task from a store (recover --from-store), the two lifecycle functions,
// which folder a sync means, store addresses, and the terminal progress line.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { text as joinText } from 'node:stream/consumers';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyStats } from '../src/domain/sync-plan.js';
import { taskDir, workspaceDir } from '../src/store/paths.js';
import { readTask, readWorkspace, updateTask } from '../src/store/task-store.js';
import { describeSync, pushWorkspaceOnStreamFinish, restoreWorkspaceOnColdStart } from '../src/sync/lifecycle.js';
import { syncPush } from '../src/sync/operations.js';
import { terminalProgress } from '../src/sync/report/progress.js';
import { renderStats } from '../src/sync/report/render.js';
import { openStore, parseStoreAddress } from '../src/sync/stores/open-store.js';
import { resolveTarget, targetOfTask } from '../src/sync/stores/target.js';
import { fetchTaskFromStore } from '../src/sync/transfer/fetch-task.js';
import { cleanupRecoveryFixtures, git, makeRepo, makeTask } from './helpers/recovery-fixtures.js';
import { configWith, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

const dir = scratch;
afterAll(() => {
  removeScratch();
  cleanupRecoveryFixtures();
});

/** A task on "machine A" with its own worktree on branch feat/x, and files in it. */
async function taskOnA(store: string, at?: Date) {
  const homeA = dir('atlas-homeA-');
  const repoA = makeRepo();
  const f = await makeTask({ home: homeA, repo: repoA, workspace: 'moved', ...(at ? { at } : {}) });
  const worktree = join(workspaceDir('moved', homeA), 'worktree');
  git(repoA, 'worktree', 'add', '-q', '-b', 'feat/x', worktree);
  await updateTask(f.ref.dir, (t) => ({ ...t, in_place: false, branch: 'feat/x', worktree }));
  writeTree(worktree, { 'src/app.ts': 'export const a = 2;\n', 'new.txt': 'made on A\n' });
  writeTree(f.ref.dir, { 'artifacts/validate/1-stdout.log': 'ok\n', 'owner.json': '{}' });
  const config = configWith({ store });
  await syncPush(targetOfTask(f.ref.id, homeA), { store: await openStore(config, homeA), config, warn: () => undefined });
  return { homeA, repoA, id: f.ref.id, worktree, config };
}

describe('recover --from-store: fetching a task', () => {
  it('brings the task folder, a worktree on its branch and the files into another home and clone', async () => {
    const store = join(dir(), 'store');
    const a = await taskOnA(store);
    const homeB = dir('atlas-homeB-');
    const repoB = join(dir(), 'clone');
    execFileSync('git', ['clone', '-q', a.repoA, repoB]);
    const warnings: string[] = [];
    const fetched = await fetchTaskFromStore({
      home: homeB,
      cwd: repoB,
      config: a.config,
      store: await openStore(a.config, homeB),
      warn: (t) => warnings.push(t),
    });
    const worktreeB = join(workspaceDir('moved', homeB), 'worktree');
    expect(fetched).toMatchObject({ task_id: a.id, workspace: 'moved', worktree: worktreeB });
    expect(readTree(worktreeB)).toMatchObject({ 'src/app.ts': 'export const a = 2;\n', 'new.txt': 'made on A\n', 'README.md': '# demo\n' });
    expect(git(worktreeB, 'branch', '--show-current')).toBe('feat/x');
    const dirB = taskDir('moved', a.id, homeB);
    expect(readTask(dirB)).toMatchObject({ repo_root: repoB, worktree: worktreeB, branch: 'feat/x' });
    expect(readFileSync(join(dirB, 'artifacts/validate/1-stdout.log'), 'utf8')).toBe('ok\n');
    expect(existsSync(join(dirB, 'owner.json'))).toBe(false);
    expect(readWorkspace('moved', homeB)).toMatchObject({ repo_root: repoB, worktree: worktreeB, tasks: [a.id] });
    expect(warnings).toEqual([]);
    // git steps stage everything: the state file is excluded in the repository's info/exclude.
    expect(existsSync(join(worktreeB, '.sandbox-state'))).toBe(true);
    expect(git(worktreeB, 'status', '--porcelain')).not.toMatch(/sandbox-state/);
    expect(git(a.worktree, 'status', '--porcelain')).not.toMatch(/sandbox-state/);
    expect(readFileSync(join(repoB, '.git', 'info', 'exclude'), 'utf8').match(/\/\.sandbox-state\*/g)).toHaveLength(1);
    const again = fetchTaskFromStore({
      home: homeB,
      cwd: repoB,
      config: a.config,
      store: await openStore(a.config, homeB),
      warn: () => undefined,
      taskId: a.id,
    });
    await expect(again).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/already in/) });
  });

  it('starts from HEAD with a warning when the clone lacks the base commit; refuses what it cannot do', async () => {
    const store = join(dir(), 'store');
    const a = await taskOnA(store);
    await updateTask(taskDir('moved', a.id, a.homeA), (t) => ({ ...t, base_commit: 'f'.repeat(40) }));
    await syncPush(targetOfTask(a.id, a.homeA), { store: await openStore(a.config, a.homeA), config: a.config, warn: () => undefined });
    const homeB = dir('atlas-homeB-');
    const repoB = makeRepo();
    const warnings: string[] = [];
    const open = async () => openStore(a.config, homeB);
    await expect(
      fetchTaskFromStore({ home: homeB, cwd: dir(), config: a.config, store: await open(), warn: () => undefined }),
    ).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/inside a clone/) });
    await expect(
      fetchTaskFromStore({ home: homeB, cwd: repoB, config: a.config, store: await open(), warn: () => undefined, taskId: 'nope' }),
    ).rejects.toMatchObject({ exitCode: 2 });
    await expect(
      fetchTaskFromStore({
        home: homeB,
        cwd: repoB,
        config: a.config,
        store: await open(),
        warn: () => undefined,
        taskId: 'task-20990101-000000',
      }),
    ).rejects.toMatchObject({ exitCode: 4, message: expect.stringMatching(/no task task-20990101-000000 in/) });
    const fetched = await fetchTaskFromStore({
      home: homeB,
      cwd: repoB,
      config: a.config,
      store: await open(),
      warn: (t) => warnings.push(t),
      taskId: a.id,
    });
    expect(warnings.join()).toMatch(/base commit ffffffffffff is not in .*starts from HEAD/);
    expect(readFileSync(join(fetched.worktree, 'new.txt'), 'utf8')).toBe('made on A\n');
    const empty = configWith({ store: join(dir(), 'empty-store') });
    await expect(
      fetchTaskFromStore({ home: dir(), cwd: repoB, config: empty, store: await openStore(empty, homeB), warn: () => undefined }),
    ).rejects.toMatchObject({ exitCode: 4, message: expect.stringMatching(/holds no task/) });
  });

  it('asks which task when the store holds several', async () => {
    const store = join(dir(), 'store');
    await taskOnA(store, new Date('2026-01-01T10:00:00Z'));
    const b = await taskOnA(store, new Date('2026-01-01T11:00:00Z'));
    const repo = makeRepo();
    await expect(
      fetchTaskFromStore({ home: dir(), cwd: repo, config: b.config, store: await openStore(b.config, dir()), warn: () => undefined }),
    ).rejects.toMatchObject({
      exitCode: 4,
      message: expect.stringMatching(/holds 2 tasks; say which one/),
    });
  });
});

describe('lifecycle sync functions', () => {
  it('OnColdStart restores when configured, is off otherwise, and fails with a clear error', async () => {
    const store = join(dir(), 'store');
    const a = await taskOnA(store);
    expect(await restoreWorkspaceOnColdStart({ home: a.homeA, config: configWith({ store }), taskId: a.id })).toBeUndefined();
    expect(
      await restoreWorkspaceOnColdStart({ home: a.homeA, config: configWith({ init_from_store: true }), taskId: a.id }),
    ).toBeUndefined();
    rmSync(join(a.worktree, 'new.txt'));
    rmSync(join(a.worktree, '.sandbox-state'));
    const restored = await restoreWorkspaceOnColdStart({
      home: a.homeA,
      config: configWith({ store, init_from_store: true }),
      taskId: a.id,
    });
    expect(restored?.stats).toMatchObject({ direction: 'pull', files_downloaded: 1 });
    expect(readFileSync(join(a.worktree, 'new.txt'), 'utf8')).toBe('made on A\n');
    await expect(
      restoreWorkspaceOnColdStart({ home: a.homeA, config: configWith({ store, init_from_store: true }), taskId: 'task-20990101-000000' }),
    ).rejects.toMatchObject({
      exitCode: 4,
      message: expect.stringMatching(
        /^OnColdStart: restoring the workspace of task-20990101-000000 from .* failed, so the step did not start: no task/,
      ),
    });
  });

  it('OnStreamFinish pushes when configured, is off otherwise, and never throws', async () => {
    const store = join(dir(), 'store');
    const a = await taskOnA(store);
    expect(await pushWorkspaceOnStreamFinish({ home: a.homeA, config: configWith(), taskId: a.id })).toEqual({ status: 'off' });
    writeTree(a.worktree, { 'later.txt': 'after the agent run\n' });
    const pushed = await pushWorkspaceOnStreamFinish({ home: a.homeA, config: configWith({ store }), taskId: a.id });
    expect(pushed.status === 'pushed' && pushed.result.stats).toMatchObject({ files_uploaded: 1 });
    expect(pushed.status === 'pushed' && describeSync(pushed.result.stats)).toMatch(
      /^push \d+: 1 uploaded, \d+ reused, 0 skipped, \d+ bytes in \d+ ms$/,
    );
    const failed = await pushWorkspaceOnStreamFinish({ home: a.homeA, config: configWith({ store }), taskId: 'task-20990101-000000' });
    expect(failed).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^OnStreamFinish: pushing the workspace of task-20990101-000000/),
      hint: expect.any(String),
    });
  });
});

describe('targets, store addresses, output', () => {
  it('resolves --dir, --task and the task of the current directory; refuses mixed flags', async () => {
    const store = join(dir(), 'store');
    const a = await taskOnA(store);
    const d = dir();
    expect(resolveTarget({ dir: d }, '/', a.homeA)).toMatchObject({ root: d, workspace: expect.stringMatching(/^atlas-sync-/) });
    expect(resolveTarget({ dir: 'x', workspace: 'named' }, d, a.homeA)).toEqual({ root: join(d, 'x'), tree: 'named', workspace: 'named' });
    expect(resolveTarget({ task: a.id }, '/', a.homeA)).toMatchObject({ root: a.worktree, tree: 'moved', task: { id: a.id } });
    expect(resolveTarget({}, join(a.worktree, 'src'), a.homeA)).toMatchObject({ root: a.worktree, task: { id: a.id } });
    expect(() => resolveTarget({ task: a.id, dir: d }, '/', a.homeA)).toThrow(/pass one/);
    expect(() => resolveTarget({ task: a.id, workspace: 'w' }, '/', a.homeA)).toThrow(/--workspace goes with --dir/);
    expect(() => resolveTarget({ dir: d, workspace: '.hidden' }, '/', a.homeA)).toThrow(/cannot name a folder in the store/);
    expect(() => resolveTarget({}, d, a.homeA)).toThrow(/no atlas task for this directory/);
    // --workspace alone: a command of the store alone takes it; one that needs the folder refuses it.
    expect(resolveTarget({ workspace: 'named' }, d, a.homeA, { storeOnly: true })).toEqual({
      root: d,
      tree: 'named',
      workspace: 'named',
      named: true,
    });
    expect(() => resolveTarget({ workspace: 'named' }, d, a.homeA)).toThrow(/pass the folder too, with --dir PATH/);
    expect(() => resolveTarget({ workspace: 'named', task: a.id }, d, a.homeA, { storeOnly: true })).toThrow(/--workspace goes with --dir/);
    expect(() => resolveTarget({ workspace: '../up' }, d, a.homeA, { storeOnly: true })).toThrow(/cannot name a folder in the store/);
  });

  it('parses store addresses', () => {
    expect(parseStoreAddress('', '/h')).toEqual({ kind: 'dir', path: '/h/store' });
    expect(parseStoreAddress('$ATLAS_HOME/other', '/h')).toEqual({ kind: 'dir', path: '/h/other' });
    expect(parseStoreAddress('file:///srv/store', '/h')).toEqual({ kind: 'dir', path: '/srv/store' });
    expect(parseStoreAddress('s3://my-bucket/a/b/', '/h')).toEqual({ kind: 's3', bucket: 'my-bucket', prefix: 'a/b' });
    expect(parseStoreAddress('s3://my-bucket', '/h')).toEqual({ kind: 's3', bucket: 'my-bucket', prefix: '' });
    expect(() => parseStoreAddress('s3://B_ad/x', '/h')).toThrow(/not a valid bucket name/);
    expect(() => parseStoreAddress('s3://bucket/../x', '/h')).toThrow(/"\.\."/);
    expect(() => parseStoreAddress('gs://bucket/x', '/h')).toThrow(/unsupported store/);
    // A mistyped S3 address was a folder named "s3:" in the current directory; a relative folder a
    // different store wherever atlas ran.
    for (const typo of ['s3:/bucket/x', 's3:bucket']) expect(() => parseStoreAddress(typo, '/h'), typo).toThrow(/unsupported store/);
    expect(() => parseStoreAddress('S3//bucket', '/h')).toThrow(/relative folder/);
    expect(() => parseStoreAddress('store', '/h')).toThrow(/a relative folder would be a different store/);
    expect(() => parseStoreAddress('./store', '/h')).toThrow(expect.objectContaining({ exitCode: 2 }));
    expect(parseStoreAddress('~/atlas-store', '/h')).toEqual({ kind: 'dir', path: join(homedir(), 'atlas-store') });
  });

  it('draws a progress line only on a terminal, and renders stats', () => {
    const written: string[] = [];
    const tty = { isTTY: true, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream;
    const p = terminalProgress(tty);
    p.start('pull ws', 2, 2048);
    p.advance(1024);
    p.finish();
    expect(written.join('')).toContain('pull ws 1/2 files, 1.0 KiB of 2.0 KiB');
    const quiet: string[] = [];
    const q = terminalProgress({ isTTY: false, write: (s: string) => quiet.push(s) } as unknown as NodeJS.WriteStream);
    q.start('x', 1, 1);
    q.advance(1);
    q.finish();
    expect(quiet).toEqual([]);
    const stats = {
      ...emptyStats('pull'),
      version: '5',
      files_downloaded: 2,
      bytes_transferred: 3 * 1024 * 1024,
      duration_ms: 1500,
      notes: ['kept a'],
    };
    expect(renderStats(stats, '/s')).toBe(
      'pulled version 5 (/s)\n  downloaded 2, deleted 0, skipped 0\n  3.0 MiB transferred in 1.5s\n  note: kept a',
    );
    expect(renderStats(emptyStats('push'), '/s')).toMatch(/^push: nothing to do/);
  });
});

describe('store errors say what to do', () => {
  it('maps S3 failures to messages with their fix', async () => {
    const { s3Error } = await import('../src/sync/stores/s3-errors.js');
    const at = 's3://b/p';
    expect(s3Error({ name: 'CredentialsProviderError', message: 'Could not load credentials from any providers' }, 'x', at)).toMatchObject({
      exitCode: 3,
      hint: expect.stringMatching(/AWS_ACCESS_KEY_ID/),
    });
    expect(s3Error({ name: 'ExpiredToken', message: 'expired' }, 'x', at)).toMatchObject({
      exitCode: 3,
      message: expect.stringMatching(/refused by s3:\/\/b\/p \(ExpiredToken\)/),
    });
    expect(
      s3Error({ name: 'AccessDenied', message: 'Access Denied', $metadata: { httpStatusCode: 403 } }, 'p/ws/1/a.txt', at),
    ).toMatchObject({ exitCode: 1, message: 'access denied to p/ws/1/a.txt (s3://b/p)', hint: expect.stringMatching(/s3:GetObject/) });
    expect(s3Error({ name: 'NoSuchBucket', message: 'no' }, 'x', at)).toMatchObject({
      exitCode: 4,
      hint: expect.stringMatching(/create it/),
    });
    expect(s3Error(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), 'p/ws/1/a.txt', at)).toMatchObject({
      message: expect.stringMatching(/^network error on p\/ws\/1\/a.txt .*ECONNRESET/),
    });
    expect(s3Error({ name: 'TimeoutError', message: 'timed out' }, 'k', at).message).toMatch(/^network error on k/);
    expect(s3Error({ name: 'InternalError', message: 'boom', $metadata: { httpStatusCode: 500 } }, 'k', at)).toMatchObject({
      message: 'S3 error on k (s3://b/p): InternalError (HTTP 500): boom',
      hint: expect.stringMatching(/run the command again/),
    });
    const own = new (await import('../src/domain/errors.js')).AtlasError('mine');
    expect(s3Error(own, 'k', at)).toBe(own);
  });

  it('a store folder that is not a folder, or damaged, is reported with the path', async () => {
    const base = dir();
    writeTree(base, { 'not-a-folder': 'file' });
    const { DirectoryStore } = await import('../src/sync/stores/dir-store.js');
    const store = new DirectoryStore(join(base, 'not-a-folder'));
    await expect(store.checkAccess()).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/sync.store .*not-a-folder is a file, not a folder/),
      hint: expect.stringMatching(/point sync.store at a folder/),
    });
    await expect(store.listVersionNames('ws')).rejects.toThrow(/cannot list/);
    await expect(store.listTaskIndex()).rejects.toThrow(/cannot list/);
    await expect(store.putTaskIndex('task-20260101-000000', 'ws')).rejects.toThrow(/cannot write to the store folder/);
    await expect(store.commitVersion('ws', '1', '{}')).rejects.toThrow(/cannot finish version 1/);
    const good = new DirectoryStore(join(base, 'store'));
    writeTree(join(base, 'store'), { 'ws/5/.sandbox-state/oops': 'a folder where the state goes' });
    await expect(joinText((await good.readState('ws', '5'))!)).rejects.toThrow(/cannot read .*\.sandbox-state/);
    await expect(good.download('ws', '5', 'missing.txt', join(base, 'dest.tmp'))).rejects.toThrow(
      /cannot read .*missing.txt from the store/,
    );
    expect(await good.listTaskIndex()).toEqual([]);
    expect(await good.findBlobs('ws', [{ sha256: 'a'.repeat(64), size: 1 }])).toEqual(new Set());
    await expect(good.putBlob('ws', join(base, 'no-such-file'))).rejects.toThrow(/cannot copy .*no-such-file into the store/);
    expect(await good.listVersionNames('ws')).toEqual(['5']);
  });
});

describe('sync as lifecycle builtins', () => {
  it('are off without sync.store; restore on cold start only with init_from_store; push throws its failure for the bus to log', async () => {
    const { syncBuiltins } = await import('../src/sync/lifecycle-builtins.js');
    const store = join(dir(), 'store');
    const a = await taskOnA(store);
    const base = {
      task_id: a.id,
      step_name: 'implement',
      conversation_id: null,
      workspace: a.worktree,
      task_dir: taskDir('moved', a.id, a.homeA),
    };
    expect(syncBuiltins(a.homeA, configWith())).toEqual({});
    expect(Object.keys(syncBuiltins(a.homeA, configWith({ store })))).toEqual(['on_stream_finish']);
    const both = syncBuiltins(a.homeA, configWith({ store, init_from_store: true }));
    rmSync(join(a.worktree, 'new.txt'));
    rmSync(join(a.worktree, '.sandbox-state'));
    await both.on_cold_start!({ ...base, point: 'on_cold_start', reason: 'resumed' });
    expect(readFileSync(join(a.worktree, 'new.txt'), 'utf8')).toBe('made on A\n');
    writeTree(a.worktree, { 'agent-wrote.txt': 'x' });
    await both.on_stream_finish!({ ...base, point: 'on_stream_finish', ok: true, usage: null, error: null });
    const versions = (await import('node:fs')).readdirSync(join(store, 'moved')).filter((n) => /^\d+$/.test(n));
    expect(versions).toHaveLength(2);
    await expect(
      both.on_stream_finish!({ ...base, task_id: 'task-20990101-000000', point: 'on_stream_finish', ok: true, usage: null, error: null }),
    ).rejects.toThrow(/^OnStreamFinish: pushing the workspace of task-20990101-000000/);
    await expect(
      both.on_cold_start!({ ...base, task_id: 'task-20990101-000000', point: 'on_cold_start', reason: 'new_workspace' }),
    ).rejects.toThrow(/^OnColdStart: restoring/);
  });
});

describe('sandbox stubs', () => {
  it("a killed sandboxed run's empty read-only stubs are never stored; the person's files of the same names are", async () => {
    const { chmodSync, writeFileSync } = await import('node:fs');
    const { scanWorkspace } = await import('../src/sync/scan/scan.js');
    const dir = scratch();
    writeTree(dir, { '.bashrc': '', '.mcp.json': '{"mcpServers":{}}', '.profile': '', 'src/.gitconfig': '', 'main.txt': 'work' });
    chmodSync(join(dir, '.bashrc'), 0o444); // what bubblewrap leaves as a mount point
    chmodSync(join(dir, '.mcp.json'), 0o444); // read-only but with content: the person's
    chmodSync(join(dir, 'src/.gitconfig'), 0o444); // not at the root: not a stub
    writeFileSync(join(dir, 'notes.md'), '');
    chmodSync(join(dir, 'notes.md'), 0o444); // empty read-only, but no name the sandbox protects
    const { files } = await scanWorkspace(dir, []);
    expect(files.map((f) => f.path)).toEqual(['.mcp.json', '.profile', 'main.txt', 'notes.md', 'src/.gitconfig']);
  });
});
