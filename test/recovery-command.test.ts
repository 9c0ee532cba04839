// `atlas recover` around the runner (runRecoverCommand): which task it picks, what it prints, how
// it ends; the runner is a fake, the tasks are real crashed tasks in temp folders.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import type { AtlasError } from '../src/domain/errors.js';
import type { EntryDirective } from '../src/engine/contract.js';
import { runRecoverCommand } from '../src/recovery/command.js';
import type { TaskFixture } from './helpers/recovery-fixtures.js';
import { cleanupRecoveryFixtures, crashedTask, makeRepo, tempHome } from './helpers/recovery-fixtures.js';

let home: string;
let repo: string;
const config = defaultConfig();

beforeEach(() => {
  home = tempHome();
  repo = makeRepo();
});
afterEach(() => cleanupRecoveryFixtures());

/** A crashed task (dead owner) running step `index` since 10 minutes ago. */
const crashedAt = (index: number, f?: TaskFixture, extra = {}) => crashedTask(home, repo, index, f, extra);

describe('runRecoverCommand (what `atlas recover` does around the runner)', () => {
  function fakeOut(json: boolean) {
    const lines: string[] = [];
    const results: unknown[] = [];
    return {
      lines,
      results,
      out: {
        json,
        line: (text = '') => {
          if (!json) lines.push(text);
        },
        result: (data: unknown, text: () => string) => {
          results.push(data);
          if (!json) lines.push(text());
        },
      },
    };
  }

  it("--yes: prints the diagnosis, recovers with the repository's config and prints the outcome", async () => {
    const f = await crashedAt(0);
    const { out, lines, results } = fakeOut(false);
    const roots: string[] = [];
    const entries: EntryDirective[] = [];
    const code = await runRecoverCommand(
      {
        home,
        cwd: repo,
        out,
        interactive: false,
        config: async (task) => {
          roots.push(task.repo_root);
          return config;
        },
        resume: (ref) => async (entry) => {
          entries.push(entry);
          return { state: 'completed', exitCode: 0, message: `task ${ref.id} completed` };
        },
      },
      { yes: true },
    );
    expect(code).toBe(0);
    expect(roots).toEqual([repo]);
    expect(entries.map((e) => e.kind)).toEqual(['retry_step']);
    const text = lines.join('\n');
    expect(text).toContain(`Task ${f.ref.id} crashed.`);
    expect(text).toContain('Recommended: retry_step.');
    expect(text).toContain(`Outcome        completed: task ${f.ref.id} completed`);
    expect(results).toHaveLength(1);
  });

  it('--json prints only the result document', async () => {
    const f = await crashedAt(1);
    const { out, lines, results } = fakeOut(true);
    const code = await runRecoverCommand(
      {
        home,
        cwd: repo,
        out,
        interactive: false,
        config: async () => config,
        resume: () => async () => ({ state: 'completed', exitCode: 0, message: 'done' }),
      },
      { task: f.ref.id, yes: true },
    );
    expect(code).toBe(5);
    expect(lines).toEqual([]);
    expect(results[0]).toMatchObject({
      task_id: f.ref.id,
      action: 'manual',
      action_source: 'recommended',
      exit_code: 5,
      state: 'awaiting_human',
    });
  });

  it('a bad --action is refused before any hook is touched', async () => {
    const f = await crashedAt(0);
    const { out } = fakeOut(false);
    const error = await runRecoverCommand(
      {
        home,
        cwd: repo,
        out,
        interactive: false,
        config: async () => config,
        resume: () => async () => ({ state: 'completed', exitCode: 0, message: '' }),
      },
      { action: 'redo' },
    ).catch((e: unknown) => e);
    expect((error as AtlasError).exitCode).toBe(2);
    expect(f.manager.read().state).toBe('step_running');
  });
});
