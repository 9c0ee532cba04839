import { describe, expect, it } from 'vitest';
import type { StepCheckpoint } from '../src/domain/checkpoint.js';
import { newCheckpointId } from '../src/store/ids.js';
import { atlas, createFixtureTask, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

describe('concurrent writers', () => {
  it('20 processes adding a checkpoint to one hook at the same moment all land, and pruning keeps the newest 50', async () => {
    const home = tempDir('atlas-home-');
    const repo = makeGitRepo();
    const { ref, manager } = await createFixtureTask({ home, repo });

    // 45 existing checkpoints: 20 more exceed the default maximum of 50 by 15.
    const existing: StepCheckpoint[] = Array.from({ length: 45 }, (_, i) => ({
      checkpoint_id: newCheckpointId(),
      created_at: '2026-01-17T14:00:00Z',
      step_name: 'analyze',
      step_index: 0,
      description: `existing ${i}`,
      trigger: 'manual',
      git_branch: 'main',
      git_dirty: false,
    }));
    await manager.update((hook) => ({ ...hook, checkpoints: existing }));

    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        atlas(['checkpoint', `concurrent ${i}`, '--task', ref.id, '--json'], { env: { ATLAS_HOME: home } }),
      ),
    );
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const createdIds = results.map((r) => JSON.parse(r.stdout).checkpoint.checkpoint_id as string);

    const hook = manager.read();
    expect(hook.checkpoints).toHaveLength(50);
    const kept = hook.checkpoints.map((c) => c.checkpoint_id);
    // Every concurrent checkpoint landed (none lost to a lost update)...
    for (const id of createdIds) expect(kept).toContain(id);
    // ...and the 15 oldest were pruned, oldest first.
    expect(kept.slice(0, 30)).toEqual(existing.slice(15).map((c) => c.checkpoint_id));
    const descriptions = hook.checkpoints
      .slice(30)
      .map((c) => c.description)
      .sort();
    expect(descriptions).toEqual(Array.from({ length: 20 }, (_, i) => `concurrent ${i}`).sort());
  });
});
