// Issue 35's smaller items, each seen on a real run: what status says after an OnColdStart hook
// failure, check not running lint twice, recover's attempt count, an approval wait's progress
// line, conflicting resume flags, and where a failed command's output is kept.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stepResult } from '../src/cli/progress/format.js';
import { actionOptions } from '../src/recovery/actions.js';
import { detectValidationCommands } from '../src/templates/detect-validation.js';
import { tempDir } from './helpers/core-fixtures.js';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, onlyTask, writeFiles } from './helpers/engine-fixtures.js';
import { installAgent, npmRepo } from './helpers/everyday-fixtures.js';

let sb: Sandbox | undefined;
beforeAll(() => ensureBuilt());
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

function packageDir(scripts: Record<string, string>): string {
  const dir = tempDir();
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ scripts }));
  return dir;
}

describe('check does not run what npm test already runs', () => {
  it('leaves out npm run lint when pretest runs it (minimist), and says so', () => {
    const minimist = packageDir({
      prelint: 'evalmd README.md',
      lint: 'eslint --ext=js,mjs .',
      pretest: 'npm run lint',
      'tests-only': 'nyc tape',
      test: 'npm run tests-only',
      posttest: 'aud --production',
    });
    expect(detectValidationCommands(minimist)).toEqual({
      commands: ['npm test'],
      source: 'package.json scripts (npm run lint left out: npm test runs it through pretest)',
    });
  });

  it('recognises run-s / npm-run-all, yarn, the same text, and the test script itself; keeps scripts it does not run', () => {
    const runAll = packageDir({ lint: 'eslint .', typecheck: 'tsc', test: 'run-s lint typecheck unit', unit: 'node --test' });
    expect(detectValidationCommands(runAll)?.commands).toEqual(['npm test']);
    expect(detectValidationCommands(runAll)?.source).toBe(
      'package.json scripts (npm run lint left out: npm test runs it; npm run typecheck left out: npm test runs it)',
    );
    expect(detectValidationCommands(packageDir({ lint: 'eslint .', posttest: 'yarn lint', test: 'vitest' }))?.commands).toEqual([
      'npm test',
    ]);
    expect(detectValidationCommands(packageDir({ lint: 'eslint .', pretest: 'eslint .', test: 'vitest' }))?.commands).toEqual(['npm test']);
    expect(detectValidationCommands(packageDir({ 'type-check': 'tsc', test: 'npm run type-check && vitest' }))?.commands).toEqual([
      'npm test',
    ]);
    // lint:fix, linter and a lint named in an echo are other things: lint still runs on its own.
    for (const test of ['npm run lint:fix && vitest', 'npm run linter', 'vitest']) {
      expect(detectValidationCommands(packageDir({ lint: 'eslint .', test }))?.commands, test).toEqual(['npm run lint', 'npm test']);
    }
    // Without a test script, lint is all there is.
    expect(detectValidationCommands(packageDir({ lint: 'eslint .', pretest: 'npm run lint' }))?.commands).toEqual(['npm run lint']);
    // A package.json that is not JSON, or has no scripts atlas runs, leaves the next source.
    const broken = tempDir();
    writeFileSync(join(broken, 'package.json'), '{ not json');
    writeFileSync(join(broken, 'Makefile'), 'test:\n\ttrue\n');
    expect(detectValidationCommands(broken)).toEqual({ commands: ['make test'], source: 'Makefile' });
    writeFileSync(join(broken, 'package.json'), JSON.stringify({ scripts: { build: 'tsc' } }));
    expect(detectValidationCommands(broken)).toEqual({ commands: ['make test'], source: 'Makefile' });
  });
});

describe('progress and counts', () => {
  it('an approval wait is not shown as a failure', () => {
    expect(stepResult({ index: 2, name: 'approve', ok: false, waiting: true, durationMs: 12, summary: 'waiting for approval' }, 4)).toBe(
      '⏸ [3/4] approve paused after 12ms: waiting for approval',
    );
    expect(stepResult({ index: 2, name: 'build', ok: false, durationMs: 12, summary: 'exit 1' }, 4)).toBe(
      '✗ [3/4] build stopped in 12ms: exit 1',
    );
  });

  it('recover offers the attempt count the run then shows: 2/2 past max_attempts 1, 2/3 within', () => {
    const options = (attempt: number, max: number) =>
      actionOptions({
        taskId: 'task-1',
        position: {
          kind: 'in_step',
          step: { step_name: 'slow', step_index: 0, started_at: '2026-01-01T00:00:00Z', attempt, max_attempts: max },
          definition: undefined,
          startedAt: '2026-01-01T00:00:00Z',
        },
        checkpoint: undefined,
        stepNames: ['slow', 'validate'],
      })[0]!.effect;
    expect(options(1, 1)).toContain('(attempt 2/2 — past max_attempts (1): one extra attempt');
    expect(options(1, 3)).toContain('(attempt 2/3)');
  });
});

describe('everyday runs', () => {
  it('atlas resume --approve --reject is a usage error (exit 2) before any task is looked for', async () => {
    const s = (sb = npmRepo());
    const both = await atlas(s, ['resume', '--approve', '--reject']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--approve and --reject exclude each other');
  });

  it('a failed command names its output by absolute path', async () => {
    const s = (sb = npmRepo({ test: 'node -e "console.error(\'boom\'); process.exit(3)"' }));
    const run = await atlas(s, ['start', 'check', '--local']);
    expect(run.code).toBe(1);
    const { dir } = onlyTask(s);
    const stdout = join(dir, 'artifacts', 'validate', '1-1-stdout.log');
    expect(run.stdout + run.stderr).toContain(`output kept in ${stdout}, ${join(dir, 'artifacts', 'validate', '1-1-stderr.log')}`);
    expect(existsSync(stdout)).toBe(true);
  });

  it('after an OnColdStart hook failure, status says the hook failed, not that a crash cut the step off', async () => {
    const s = (sb = npmRepo());
    const agent = installAgent(s);
    writeFiles(s.repo, {
      '.atlas/templates/cold.yaml':
        'name: cold\nlifecycle:\n  on_cold_start: "sh -c \'echo the cache is gone >&2; exit 3\'"\nsteps:\n  - name: analyze\n    type: ai\n    prompt: "look"\n',
    });
    const run = await atlas(s, ['start', 'cold', 'look around', '--local', '--in-place', ...agent]);
    expect(run.code, run.stdout + run.stderr).toBe(5);
    const status = await atlas(s, ['status']);
    expect(status.stdout).toContain('the OnColdStart hook failed, so the agent did not start during step analyze');
    expect(status.stdout).not.toContain('crash');
  });
});
