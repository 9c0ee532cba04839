// sync.keep_versions: a push that made a version prunes the workspace and its task folder to the
// newest N, the OnStreamFinish push too, and a prune failing after a successful push is a warning.
// `atlas sync prune` itself is in test/sync-prune.test.ts.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pushWorkspaceOnStreamFinish } from '../src/sync/lifecycle.js';
import { syncPush } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { renderPrune } from '../src/sync/versions/render-prune.js';
import { readStoredVersion, removeScratch, writeTree } from './helpers/sync-fixtures.js';
import { T0, world } from './helpers/sync-prune-fixtures.js';

afterAll(() => removeScratch());

describe('sync.keep_versions', () => {
  it('prunes the workspace and the task folder after each push that made a version', async () => {
    const w = world({ keep_versions: 2 });
    const taskDir = join(w.base, 'task');
    writeTree(taskDir, { 'hook.json': '{}' });
    const target: SyncTarget = { ...w.target, task: { id: 'task-20260101-120000', dir: taskDir } };
    let last: Awaited<ReturnType<typeof syncPush>> | undefined;
    for (let i = 0; i < 4; i++) {
      writeTree(w.src, { 'a.txt': `${i}` });
      writeTree(taskDir, { 'hook.json': `{"n":${i}}` });
      last = await syncPush(target, await w.deps(T0 + i * 10));
    }
    expect(w.versions()).toEqual([String(T0 + 20), String(T0 + 30)]);
    expect(w.versions('ws/.tasks/task-20260101-120000')).toHaveLength(2);
    expect(last!.pruned).toMatchObject({
      keep: 2,
      removed: { versions: 2 },
      trees: [{ tree: 'ws' }, { tree: 'ws/.tasks/task-20260101-120000' }],
    });
    expect(renderPrune(last!.pruned!)).toMatch(
      /^removed 2 version\(s\), .*\n {2}ws: kept 2 versions, \d+ to \d+\n(.*\n)+ {2}ws\/\.tasks\/task-20260101-120000: kept 2 versions/,
    );
    // A push that made no version does not prune.
    const noop = await syncPush(target, await w.deps(T0 + 50));
    expect(noop.stats.version).toBeNull();
    expect(noop.pruned).toBeUndefined();
  });

  it('the OnStreamFinish push prunes too', async () => {
    const w = world({ keep_versions: 1 });
    for (let i = 0; i < 3; i++) {
      writeTree(w.src, { 'a.txt': `${i}` });
      const pushed = await pushWorkspaceOnStreamFinish({
        home: join(w.base, 'home'),
        config: w.config,
        taskId: 'task-20260101-120000',
        target: w.target,
      });
      expect(pushed.status).toBe('pushed');
    }
    expect(w.versions()).toHaveLength(1);
    expect(readStoredVersion(w.store, 'ws', w.versions()[0]!)['a.txt']).toBe('2');
  });

  it('a prune that fails after a successful push is a warning, and says what it removed before failing', async () => {
    const w = world({ keep_versions: 1 });
    await w.push(T0, { 'a.txt': 'a' });
    writeTree(join(w.store, 'ws', String(T0 - 200)), { 'old.txt': 'old' });
    // A .sandbox-state that is a folder cannot be removed as a file: the removal fails there.
    mkdirSync(join(w.store, 'ws', String(T0 - 100), '.sandbox-state'), { recursive: true });
    writeTree(w.src, { 'a.txt': 'b' });
    const deps = await w.deps(T0 + 10_000);
    const pushed = await syncPush(w.target, deps);
    expect(pushed.stats.version).toBe(String(T0 + 10_000));
    expect(pushed.prune_failed).toMatch(
      new RegExp(
        `push succeeded, but removing old versions \\(sync.keep_versions: 1\\) failed: pruning ws .*after removing ${T0 - 200}, version ${T0 - 100} could not be removed`,
      ),
    );
    expect(deps.warnings.join('\n')).toContain(pushed.prune_failed!);
    expect(w.versions()).toEqual([String(T0 - 100), String(T0), String(T0 + 10_000)]);
  });
});
