// A task keeps the execution mode it started in (issue 35): started with --local where the
// configured default is the sandbox, interrupted with Ctrl-C, then resumed or recovered, its
// steps run local (their receipts say so). A flag changes it, and atlas says so.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, finished, onlyTask, startAtlas, waitFor } from './helpers/engine-fixtures.js';
import { installAgent, npmRepo } from './helpers/everyday-fixtures.js';

let sb: Sandbox | undefined;
beforeAll(() => ensureBuilt());
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

/** A task started with --local in a home whose default is the sandbox, stopped by Ctrl-C in its first step. */
async function interruptedLocalTask(): Promise<{ s: Sandbox; agent: string[]; id: string }> {
  const s = (sb = npmRepo());
  mkdirSync(s.home, { recursive: true, mode: 0o700 });
  writeFileSync(join(s.home, 'config.yaml'), 'execution:\n  mode: sandbox\n', { mode: 0o600 });
  const agent = installAgent(s);
  const marker = join(s.base, 'hanging');
  const child = startAtlas(s, ['start', 'bugfix', 'fix the parser', '--local', ...agent], { env: { AGENT_HANG: marker } });
  const done = finished(child);
  await waitFor(() => existsSync(marker), 30_000, 'the agent to start');
  child.kill('SIGINT');
  await done;
  const task = onlyTask(s);
  expect(task.task.execution_mode).toBe('local');
  expect(task.hook.state).toBe('awaiting_human');
  return { s, agent, id: task.id };
}

function receiptModes(s: Sandbox): string[] {
  return [...new Set(onlyTask(s).hook.receipts.map((r: { execution_mode?: string }) => r.execution_mode))] as string[];
}

describe('a task keeps the mode it started in', () => {
  it('atlas resume after Ctrl-C runs it local, not in the configured sandbox', async () => {
    const { s, agent, id } = await interruptedLocalTask();
    const resumed = await atlas(s, ['resume', '--task', id, '--no-interactive', ...agent]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(onlyTask(s).hook.state).toBe('completed');
    expect(receiptModes(s)).toEqual(['local']);
    expect(resumed.stderr).not.toContain('mode from now on');
  });

  it('atlas recover --yes after Ctrl-C runs it local too', async () => {
    const { s, agent, id } = await interruptedLocalTask();
    const recovered = await atlas(s, ['recover', '--yes', '--task', id, ...agent]);
    expect(recovered.code, recovered.stdout + recovered.stderr).toBe(0);
    expect(onlyTask(s).hook.state).toBe('completed');
    expect(receiptModes(s)).toEqual(['local']);
  });

  it('a flag changes the mode, says so, and the task keeps the new one', async () => {
    const { s, agent, id } = await interruptedLocalTask();
    const resumed = await atlas(s, ['resume', '--task', id, '--no-interactive', '--sandbox', ...agent]);
    expect(resumed.stderr).toContain(`atlas: task ${id} ran in local mode; --sandbox runs it in sandbox mode from now on`);
    expect(onlyTask(s).task.execution_mode).toBe('sandbox');
  });
});
