// runTask called directly, as `atlas recover` will: every entry directive from the states it
// accepts, and refusals from the ones it does not.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PlainReporter } from '../src/cli/progress/plain-reporter.js';
import { defaultConfig } from '../src/config/load.js';
import type { EntryDirective, TaskOutcome } from '../src/engine/contract.js';
import { createTask } from '../src/engine/create-task.js';
import { runTask } from '../src/engine/run-task.js';
import { HookManager } from '../src/hook/manager.js';
import { parseTemplateData } from '../src/templates/parse.js';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { sandbox, transitions } from './helpers/engine-fixtures.js';

let sb: Sandbox;
afterEach(() => sb?.cleanup());

const quiet = () => new PlainReporter({ write: () => true } as unknown as NodeJS.WritableStream);

async function setup(flag: (sb: Sandbox) => string) {
  sb = sandbox();
  const flagFile = flag(sb);
  // Steps run with the test's environment; git needs an identity only for commits (none here).
  const template = parseTemplateData(
    {
      worktree: false,
      steps: [
        { name: 'first', type: 'command', run: 'true' },
        { name: 'flaky', type: 'command', on_failure: 'ask', run: `test -f ${flagFile}` },
        { name: 'last', type: 'command', run: 'true' },
      ],
    },
    'inline.yaml',
    'inline',
  );
  const config = defaultConfig();
  const { ref } = await createTask({ home: sb.home, cwd: sb.repo, config, template, description: 'directives' });
  const manager = new HookManager(ref, { maxCheckpoints: 50 });
  const run = (entry: EntryDirective): Promise<TaskOutcome> => runTask({ ref, config, reporter: quiet(), interactive: false, entry });
  return { ref, manager, run };
}

describe('runTask entry directives', () => {
  it('skip_step records step_skipped and continues with the next step', async () => {
    const { manager, run } = await setup(() => '/nonexistent/flag');
    const stopped = await run({ kind: 'start' });
    expect(stopped).toMatchObject({ state: 'awaiting_human', exitCode: 5 });
    const done = await run({ kind: 'skip_step', note: 'not needed here' });
    expect(done).toMatchObject({ state: 'completed', exitCode: 0 });
    const hook = manager.read();
    expect(transitions(hook)).toContain('awaiting_human → step_pending (step_skipped)');
    expect(hook.history.find((e) => e.trigger === 'step_skipped')!.details).toEqual({ step_index: 1, note: 'not needed here' });
    expect(hook.history.filter((e) => e.trigger === 'step_start').map((e) => e.details!['step_index'])).toEqual([0, 1, 2]);
  });

  it('retry_step runs the current step again with attempt + 1 and records the checkpoint it starts from', async () => {
    const { manager, run } = await setup((box) => join(box.base, 'flag'));
    const flag = join(sb.base, 'flag');
    expect((await run({ kind: 'start' })).exitCode).toBe(5);
    writeFileSync(flag, '');
    const checkpointId = manager.read().checkpoints[0]!.checkpoint_id;
    const done = await run({ kind: 'retry_step', note: 'flag created', fromCheckpoint: checkpointId });
    expect(done.state).toBe('completed');
    const starts = manager.read().history.filter((e) => e.trigger === 'step_start');
    expect(starts.map((e) => e.details)).toEqual([
      { step_index: 0, attempt: 1 },
      { step_index: 1, attempt: 1 },
      { step_index: 1, attempt: 2, from_checkpoint: checkpointId },
      { step_index: 2, attempt: 1 },
    ]);
  });

  it('continue from recovering runs the next step; directives refuse states they do not accept', async () => {
    const { manager, run } = await setup(() => '/nonexistent/flag');
    await manager.transition({ to: 'step_pending', trigger: 'setup_complete' });
    await manager.transition({ to: 'recovering', trigger: 'crash_detected' });
    await expect(run({ kind: 'start' })).rejects.toThrow(/is recovering; "start" needs it to be initializing/);
    await expect(run({ kind: 'approve' })).rejects.toThrow(/needs it to be awaiting_human/);
    const outcome = await run({ kind: 'continue' });
    expect(outcome.state).toBe('awaiting_human');
    expect(transitions(manager.read()).slice(-5)).toEqual([
      'step_pending → recovering (crash_detected)',
      'recovering → step_running (step_start)',
      'step_running → step_pending (step_complete)',
      'step_pending → step_running (step_start)',
      'step_running → awaiting_human (step_failed)',
    ]);
    await expect(run({ kind: 'continue' })).resolves.toMatchObject({ state: 'awaiting_human' });
    const rejected = await run({ kind: 'reject', note: 'no' });
    expect(rejected).toMatchObject({ state: 'failed', exitCode: 1 });
    await expect(run({ kind: 'continue' })).rejects.toThrow(/has ended|is failed/);
  });
});
