// The sandbox's scan of the worktree for protected files (a ripgrep walk, as long as a short
// command) runs once per step, not before every command: the step's commands reuse it, and the
// next step (beginStep) scans again. A file the person adds meanwhile is never taken for a stub.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { diesWithParent } from '../src/exec/parent-death.js';
import { ProcessGroups } from '../src/exec/process-groups.js';
import { runProcess } from '../src/exec/run-process.js';
import { createSandboxExecutor } from '../src/exec/sandbox/executor.js';
import { resetSandbox } from '../src/exec/sandbox/runtime.js';
import type { ProcessExecutor } from '../src/exec/types.js';
import { tempDir } from './helpers/core-fixtures.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';

function run(executor: ProcessExecutor, cwd: string, command: string) {
  return runProcess({ command, shell: true, cwd, capture: true, groups: new ProcessGroups(), executor });
}

describe.skipIf(skipSandbox)('the protected-file scan', { timeout: 60_000 }, () => {
  afterAll(() => resetSandbox());

  it("is reused by a step's commands and redone for the next step; a file the person adds is never removed", async () => {
    const base = tempDir('atlas-scan-');
    const worktree = join(base, 'worktree');
    const taskDir = join(base, 'task');
    mkdirSync(worktree, { recursive: true });
    mkdirSync(taskDir, { recursive: true });
    const policy = {
      worktree,
      tmpdir: join(taskDir, 'tmp'),
      allow_write: [worktree, join(taskDir, 'tmp')],
      deny_write: [],
      deny_read: [],
      allowed_domains: [],
    };
    // As the server's turns use it: the wrapper passes beginStep on.
    const executor = diesWithParent(createSandboxExecutor(policy, taskDir));
    executor.beginStep?.();
    const first = await run(executor, worktree, 'echo planted > .bashrc; echo rc=$?');
    expect(first.stdout.toString()).toMatch(/rc=[1-9]/);
    expect(existsSync(join(worktree, '.bashrc'))).toBe(false);
    // The person writes one while the step runs: the step's next command reuses the scan.
    writeFileSync(join(worktree, '.bashrc'), 'mine\n');
    const second = await run(executor, worktree, 'echo again >> .bashrc; echo rc=$?');
    expect(second.stdout.toString()).toMatch(/rc=[1-9]/);
    expect(readFileSync(join(worktree, '.bashrc'), 'utf8')).toBe('mine\n');
    // The next step scans again: the person's file is there, read-only, with its content.
    executor.beginStep?.();
    const third = await run(executor, worktree, 'cat .bashrc; echo more >> .bashrc; echo rc=$?');
    expect(third.stdout.toString()).toContain('mine');
    expect(third.stdout.toString()).toMatch(/rc=[1-9]/);
    expect(readFileSync(join(worktree, '.bashrc'), 'utf8')).toBe('mine\n');
    await executor.close?.();
  });
});
