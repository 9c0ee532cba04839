// Recovery never loses work in submodules (issue 8): with submodule.recurse=true a reset also
// resets each submodule's files, so their own uncommitted work is saved first, in their
// repositories, or nothing is reset (exit 5). Real submodules, added with `git submodule add`.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AtlasError } from '../src/domain/errors.js';
import { saveAndReset, saveWork } from '../src/recovery/save-work.js';
import { cleanupRecoveryFixtures, commitAll, git, makeRepo, tempHome } from './helpers/recovery-fixtures.js';

let repo: string;
let lib: string;
let base: string;

beforeEach(() => {
  tempHome();
  lib = makeRepo();
  writeFileSync(join(lib, 'lib.txt'), 'lib v0\n');
  commitAll(lib, 'lib v0');
  repo = makeRepo();
  git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'lib');
  base = commitAll(repo, 'add the lib submodule');
  git(repo, 'config', 'submodule.recurse', 'true');
});
afterEach(() => cleanupRecoveryFixtures());

const sub = join('lib');
const inLib = (file: string) => join(repo, sub, file);

describe('saving work in submodules', () => {
  it("an uncommitted edit inside a submodule survives retry_from_checkpoint's reset, on a branch in the submodule", async () => {
    writeFileSync(join(repo, 'top.txt'), 'top-level work\n');
    writeFileSync(inLib('lib.txt'), 'lib v1: uncommitted work in the submodule\n');
    writeFileSync(inLib('new.txt'), 'untracked in the submodule\n');

    const saved = await saveAndReset({ worktree: repo, taskId: 'task-20260117-143022', commit: base });
    expect(saved.saved).toBe(true);
    expect(saved.submodules).toHaveLength(1);
    const work = saved.submodules![0]!;
    expect(work).toMatchObject({ path: 'lib', branch: expect.stringMatching(/^atlas\/recovery\/task-20260117-143022\/\d{8}-\d{6}$/) });
    expect(work.files.sort()).toEqual(['lib.txt', 'new.txt']);
    expect(saved.message).toContain(`submodule lib: 2 changed paths saved on its branch ${work.branch}`);

    // The reset happened (recursively: the submodule's files are back at the checkpoint; its
    // untracked file stays, like ignored ones: `git clean` does not enter submodules) ...
    expect(readFileSync(inLib('lib.txt'), 'utf8')).toBe('lib v0\n');
    expect(existsSync(join(repo, 'top.txt'))).toBe(false);
    // ... and nothing is lost: the submodule's own repository holds its work.
    const libGit = (...args: string[]) => git(join(repo, sub), ...args);
    expect(libGit('show', `${work.branch}:lib.txt`)).toBe('lib v1: uncommitted work in the submodule');
    expect(libGit('show', `${work.branch}:new.txt`)).toBe('untracked in the submodule');
    expect(git(repo, 'show', `${saved.saved ? saved.branch : ''}:top.txt`)).toBe('top-level work');
  });

  it('only a submodule changed: its work is saved, and the message says the superproject had none', async () => {
    writeFileSync(inLib('lib.txt'), 'lib v2\n');
    const saved = await saveWork({ worktree: repo, taskId: 'task-x', resetTarget: base });
    expect(saved.saved).toBe(false);
    expect(saved.submodules?.map((s) => s.path)).toEqual(['lib']);
    expect(saved.message).toMatch(/submodule lib: 1 changed path saved .*\(the superproject has no uncommitted changes\)/);
    expect(readFileSync(inLib('lib.txt'), 'utf8')).toBe('lib v2\n'); // saving touches nothing
  });

  it('a submodule whose work cannot be saved: refused with exit 5 and nothing is reset', async () => {
    writeFileSync(inLib('lib.txt'), 'precious\n');
    writeFileSync(join(repo, 'top.txt'), 'top work\n');
    // Its .git points nowhere: git cannot read (or save) anything in it.
    writeFileSync(inLib('.git'), 'gitdir: /nonexistent/modules/lib\n');
    let error: unknown;
    try {
      await saveAndReset({ worktree: repo, taskId: 'task-x', commit: base });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AtlasError);
    expect((error as AtlasError).exitCode).toBe(5);
    expect((error as AtlasError).message).toMatch(
      /cannot save the uncommitted work in .*: (submodule lib could not be saved|its submodules cannot be listed).*nothing was reset/,
    );
    expect(readFileSync(inLib('lib.txt'), 'utf8')).toBe('precious\n');
    expect(readFileSync(join(repo, 'top.txt'), 'utf8')).toBe('top work\n');
    expect(git(repo, 'branch', '--list', 'atlas/recovery/*')).toBe('');
  });
});
