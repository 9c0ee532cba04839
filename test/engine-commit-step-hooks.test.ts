import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listTaskRefs } from '../src/store/task-store.js';
import { atlas, git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

const TEMPLATE = `name: write
steps:
  - name: write
    type: command
    run: "echo hello > hello.txt"
  - name: commit
    type: git
    action: commit
    message: "add hello"
`;

describe('a template commit step with atlas git hooks installed', () => {
  it('records the commit once, under the commit step, not as a stray hook checkpoint', async () => {
    const home = tempDir('atlas-home-');
    const repo = makeGitRepo();
    mkdirSync(join(repo, '.atlas', 'templates'), { recursive: true });
    writeFileSync(join(repo, '.atlas', 'templates', 'write.yaml'), TEMPLATE);
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'template');
    const env = { ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1' };
    expect((await atlas(['hook', 'install'], { cwd: repo, env })).code).toBe(0);

    const result = await atlas(['start', 'write', 'say hello', '--no-interactive'], { cwd: repo, env });
    expect(result.code, result.stderr).toBe(0);
    const ref = listTaskRefs(home)[0]!;
    const hook = JSON.parse(readFileSync(join(ref.dir, 'hook.json'), 'utf8'));
    const task = JSON.parse(readFileSync(join(ref.dir, 'task.json'), 'utf8'));
    const head = git(task.worktree, 'rev-parse', 'HEAD');
    expect(git(task.worktree, 'log', '-1', '--format=%s')).toBe('add hello');
    expect(hook.checkpoints.filter((c: any) => c.trigger === 'git_commit')).toEqual([]);
    const done = hook.checkpoints.filter((c: any) => c.trigger === 'step_complete' && c.step_name === 'commit');
    expect(done).toHaveLength(1);
    expect(done[0].git_commit).toBe(head);
  });
});
