// Cleanup and git hooks never surprise (issue 8): a worktree holding ignored files (a .env) is kept
// unless --include-ignored, and --dry-run names them; `atlas hook install` refuses a core.hooksPath
// from global config (every repository's hooks) unless --shared.
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atlas, git, makeRepo, makeTask, removeTempDirs, requireBuild, tempDir } from './helpers/autockpt-fixtures.js';

beforeAll(requireBuild);
afterAll(removeTempDirs);

const longAgo = () => new Date(Date.now() - 40 * 24 * 3_600_000);

async function expiredTaskWithWorktree() {
  const home = tempDir();
  const repo = makeRepo();
  writeFileSync(join(repo, '.gitignore'), '.env\nnode_modules/\n');
  git(repo, ['add', '.gitignore']);
  git(repo, ['commit', '-q', '-m', 'ignore']);
  const f = await makeTask({ home, repo, state: 'completed', at: longAgo() });
  // The dependency links atlas makes in a new worktree (a folder of symbolic links): not the user's.
  mkdirSync(join(repo, 'node_modules', 'left-pad'), { recursive: true });
  mkdirSync(join(f.worktree, 'node_modules'));
  symlinkSync(join(repo, 'node_modules', 'left-pad'), join(f.worktree, 'node_modules', 'left-pad'));
  return { home, repo, f };
}

describe('atlas cleanup and ignored files', () => {
  it('keeps a worktree holding a .env; --dry-run names it; --include-ignored deletes it with the worktree', async () => {
    const { home, repo, f } = await expiredTaskWithWorktree();
    writeFileSync(join(f.worktree, '.env'), 'API_TOKEN=not-in-git\n');

    const dry = atlas(['cleanup', '--dry-run'], { cwd: repo, home });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(
      `worktree would be kept: ${f.worktree}: it holds ignored files that removing it would delete (.env); pass --include-ignored to delete them too`,
    );
    const kept = atlas(['cleanup'], { cwd: repo, home });
    expect(kept.code).toBe(0);
    expect(existsSync(join(f.worktree, '.env'))).toBe(true);
    expect(existsSync(f.ref.dir)).toBe(false); // the task's record goes; the worktree and its .env stay

    // Once the .env is all that stops it, a later task's cleanup with --include-ignored removes both.
    const g = await makeTask({ home, repo, state: 'completed', at: longAgo() });
    writeFileSync(join(g.worktree, '.env'), 'SECRET=1\n');
    const dryAll = atlas(['cleanup', '--dry-run', '--include-ignored'], { cwd: repo, home });
    expect(dryAll.stdout).toContain(`worktree would be removed: ${g.worktree}`);
    expect(dryAll.stdout).toContain('ignored files that would be deleted with it: .env');
    expect(existsSync(join(g.worktree, '.env'))).toBe(true);
    const all = atlas(['cleanup', '--include-ignored'], { cwd: repo, home });
    expect(all.code).toBe(0);
    expect(existsSync(g.worktree)).toBe(false);
    expect(existsSync(join(repo, 'node_modules', 'left-pad'))).toBe(true); // link targets untouched
  });

  it("a worktree whose only ignored files are atlas's dependency links is removed as before", async () => {
    const { home, repo, f } = await expiredTaskWithWorktree();
    const r = atlas(['cleanup'], { cwd: repo, home });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`worktree removed: ${f.worktree}`);
    expect(existsSync(f.worktree)).toBe(false);
    expect(existsSync(join(repo, 'node_modules', 'left-pad'))).toBe(true);
  });
});

describe('atlas hook install and a shared core.hooksPath', () => {
  it('refuses a hooks folder set in global config unless --shared, naming the folder', () => {
    const home = tempDir();
    const repo = makeRepo();
    const userHome = tempDir();
    const shared = join(userHome, 'all-my-hooks');
    writeFileSync(join(userHome, '.gitconfig'), `[core]\n\thooksPath = ${shared}\n`);
    const env = { HOME: userHome, XDG_CONFIG_HOME: join(userHome, '.config') };
    const refused = atlas(['hook', 'install'], { cwd: repo, home, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`core.hooksPath comes from your global git config: ${shared} is the hooks folder of every repository`);
    expect(refused.stderr).toContain('--shared');
    expect(existsSync(join(shared, 'post-commit'))).toBe(false);

    const ok = atlas(['hook', 'install', '--shared'], { cwd: repo, home, env });
    expect(ok.code, ok.stderr).toBe(0);
    expect(existsSync(join(shared, 'post-commit'))).toBe(true);

    // A repository's own core.hooksPath is its own business: no --shared needed.
    git(repo, ['config', 'core.hooksPath', '.git/my-hooks']);
    expect(atlas(['hook', 'install'], { cwd: repo, home, env }).code).toBe(0);
  });
});
