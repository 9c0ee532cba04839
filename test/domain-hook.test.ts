import { describe, expect, it } from 'vitest';
import type { StepCheckpoint } from '../src/domain/checkpoint.js';
import { isCheckpointId, pruneCheckpoints } from '../src/domain/checkpoint.js';
import { addCheckpoint, newHook, nextStepIndex, recordEvent, transition } from '../src/domain/hook.js';
import { HookFormatError, parseHook } from '../src/domain/hook-schema.js';
import { InvalidTransitionError } from '../src/domain/hook-state.js';
import type { StepContext } from '../src/domain/step-context.js';
import { addFilesTouched, assertValidStepContext, dedupeFiles, truncateOutput, withLastOutput } from '../src/domain/step-context.js';
import { newCheckpointId } from '../src/store/ids.js';
import { seedExampleText } from './helpers/core-fixtures.js';

describe('seed 003 JSON example', () => {
  it('loads', () => {
    const hook = parseHook(JSON.parse(seedExampleText()));
    expect(hook.state).toBe('step_running');
    expect(hook.current_step?.attempt).toBe(2);
    expect(hook.checkpoints[0]?.files_snapshot?.[0]?.sha256).toBe('e3b0c44298fc1c14');
    expect(hook.receipts[0]?.key_path).toBe("m/44'/236'/0'/0/0");
  });

  it('round-trips to the same shape, field for field', () => {
    const original = JSON.parse(seedExampleText());
    const hook = parseHook(JSON.parse(seedExampleText()));
    expect(JSON.parse(JSON.stringify(hook))).toEqual(original);
  });

  it("keeps fields it does not know (a newer writer's additions survive)", () => {
    const data = JSON.parse(seedExampleText());
    data.future_field = { a: 1 };
    expect(JSON.parse(JSON.stringify(parseHook(data))).future_field).toEqual({ a: 1 });
  });

  it("reads Go's null lists as empty lists", () => {
    const data = JSON.parse(seedExampleText());
    data.checkpoints = null;
    data.receipts = null;
    data.current_step = null;
    const hook = parseHook(data);
    expect(hook.checkpoints).toEqual([]);
    expect(hook.receipts).toEqual([]);
    expect(hook.current_step).toBeUndefined();
  });

  it('refuses a newer schema version with advice', () => {
    const data = JSON.parse(seedExampleText());
    data.schema_version = '2.0';
    expect(() => parseHook(data)).toThrow(/newer than this atlas understands.*upgrade atlas/);
  });

  it('names the bad field', () => {
    const cases: [(d: any) => void, RegExp][] = [
      [(d) => (d.state = 'running'), /hook\.state: unknown state "running"/],
      [(d) => (d.current_step.attempt = 0), /hook\.current_step\.attempt: expected an integer >= 1/],
      [(d) => (d.history[1].to_state = 'bogus'), /hook\.history\[1\]\.to_state/],
      [(d) => (d.checkpoints[0].checkpoint_id = 'ckpt-xyz'), /checkpoints\[0\]\.checkpoint_id/],
      [(d) => (d.checkpoints[0].trigger = 'cron'), /checkpoints\[0\]\.trigger: unknown trigger/],
      [(d) => (d.receipts[0].exit_code = '0'), /receipts\[0\]\.exit_code/],
      [(d) => (d.created_at = 'yesterday'), /hook\.created_at: expected an RFC 3339 time/],
    ];
    for (const [mutate, message] of cases) {
      const data = JSON.parse(seedExampleText());
      mutate(data);
      expect(() => parseHook(data)).toThrow(HookFormatError);
      expect(() => parseHook(data)).toThrow(message);
    }
  });
});

describe('hook rules', () => {
  const at = '2026-01-17T14:30:22Z';

  it("a new hook starts in initializing with the seed's first event and empty lists", () => {
    const hook = newHook('task-20260117-143022', 'fix-null-pointer', at);
    expect(hook).toMatchObject({ state: 'initializing', version: '1.0', schema_version: '1.0', checkpoints: [], receipts: [] });
    expect(hook.history).toEqual([{ timestamp: at, from_state: '', to_state: 'initializing', trigger: 'task_start' }]);
  });

  it('transitions append history and never rewrite it', () => {
    const hook = newHook('task-20260117-143022', 'ws', at);
    const next = transition(hook, { to: 'step_pending', trigger: 'setup_complete', at: '2026-01-17T14:30:25Z' });
    expect(next.history.slice(0, 1)).toEqual(hook.history);
    expect(next.history[1]).toEqual({
      timestamp: '2026-01-17T14:30:25Z',
      from_state: 'initializing',
      to_state: 'step_pending',
      trigger: 'setup_complete',
    });
    expect(next.updated_at).toBe('2026-01-17T14:30:25Z');
    expect(() => transition(next, { to: 'completed', trigger: 'x', at })).not.toThrow();
    expect(() => transition(next, { to: 'step_validating', trigger: 'x', at })).toThrow(InvalidTransitionError);
    expect(recordEvent(next, { trigger: 'note', at }).history).toHaveLength(3);
  });

  it('the next step is derived from step_complete and step_skipped events', () => {
    let hook = newHook('task-20260117-143022', 'ws', at);
    expect(nextStepIndex(hook)).toBe(0);
    hook = recordEvent(hook, { trigger: 'step_complete', at, details: { step_index: 0 } });
    hook = recordEvent(hook, { trigger: 'step_start', at, details: { step_index: 1 } });
    expect(nextStepIndex(hook)).toBe(1);
    hook = recordEvent(hook, { trigger: 'step_skipped', at, details: { step_index: 1 } });
    expect(nextStepIndex(hook)).toBe(2);
  });
});

describe('step context rules', () => {
  const ctx: StepContext = { step_name: 'implement', step_index: 2, started_at: '2026-01-17T14:40:00Z', attempt: 1, max_attempts: 3 };

  it('attempt must be at least 1 and the index a step of the task', () => {
    expect(() => assertValidStepContext({ ...ctx, attempt: 0 })).toThrow(/attempt must be an integer >= 1/);
    expect(() => assertValidStepContext(ctx, 3)).not.toThrow();
    expect(() => assertValidStepContext(ctx, 2)).toThrow(/not a step of this task \(it has 2 steps\)/);
  });

  it('last output is truncated at exactly 500 characters, keeping the end', () => {
    const exactly = 'x'.repeat(500);
    expect(truncateOutput(exactly)).toBe(exactly);
    const longer = `${'a'.repeat(10)}${'b'.repeat(500)}`;
    expect(truncateOutput(longer)).toBe('b'.repeat(500));
    expect(withLastOutput(ctx, longer).last_output).toHaveLength(500);
    // Characters, not UTF-16 units: an emoji is never cut in half.
    expect(Array.from(truncateOutput('😀'.repeat(600)))).toHaveLength(500);
  });

  it('files touched are deduplicated in first-seen order', () => {
    expect(dedupeFiles(['a.go', 'b.go', 'a.go', '', 'c.go', 'b.go'])).toEqual(['a.go', 'b.go', 'c.go']);
    expect(addFilesTouched({ ...ctx, files_touched: ['a.go'] }, ['b.go', 'a.go']).files_touched).toEqual(['a.go', 'b.go']);
  });

  it('an empty working description is simply absent', () => {
    expect(JSON.parse(JSON.stringify(ctx)).working_on).toBeUndefined();
  });
});

describe('checkpoints', () => {
  const base = (i: number): StepCheckpoint => ({
    checkpoint_id: `ckpt-${i.toString(16).padStart(8, '0')}`,
    created_at: '2026-01-17T14:42:15Z',
    step_name: 'implement',
    step_index: 2,
    description: `cp ${i}`,
    trigger: 'manual',
    git_branch: 'main',
    git_dirty: false,
  });

  it('ids are ckpt- and 8 hex characters, and unique', () => {
    const ids = new Set(Array.from({ length: 2000 }, () => newCheckpointId()));
    expect(ids.size).toBe(2000);
    for (const id of ids) expect(isCheckpointId(id)).toBe(true);
    expect(isCheckpointId('ckpt-ABCDEF12')).toBe(false);
    expect(isCheckpointId('ckpt-1234567')).toBe(false);
  });

  it('pruning keeps the newest, oldest removed first', () => {
    const list = Array.from({ length: 55 }, (_, i) => base(i));
    const pruned = pruneCheckpoints(list, 50);
    expect(pruned).toHaveLength(50);
    expect(pruned[0]!.description).toBe('cp 5');
    expect(pruned[49]!.description).toBe('cp 54');
  });

  it('adding a checkpoint points the current step at it', () => {
    let hook = newHook('task-20260117-143022', 'ws', '2026-01-17T14:30:22Z');
    hook = {
      ...hook,
      current_step: { step_name: 'implement', step_index: 2, started_at: '2026-01-17T14:40:00Z', attempt: 1, max_attempts: 3 },
    };
    const next = addCheckpoint(hook, base(1), 50);
    expect(next.current_step?.current_checkpoint_id).toBe('ckpt-00000001');
    expect(next.checkpoints).toHaveLength(1);
  });
});
