// Units of issue 35's everyday changes, in this process: the private umask and the task's mode.
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { continuedTaskMode } from '../src/engine/task-mode.js';
import { SHARED_FILE_MODE, writeFileAtomic } from '../src/store/atomic-write.js';
import { writeFileAtomicAsync } from '../src/store/atomic-write-async.js';
import { enterPrivateUmask, mkdirForPerson, personMode, withPersonUmask } from '../src/store/private-umask.js';
import { readTask } from '../src/store/task-store.js';
import { createFixtureTask, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('private umask', () => {
  it('atlas makes private files; what it runs and writes for the person gets their umask back', async () => {
    const before = process.umask(0o022);
    try {
      const dir = mkdtempSync(join(tmpdir(), 'atlas-umask-'));
      dirs.push(dir);
      // Before an entry point asked for it, nothing changes.
      expect(withPersonUmask(() => process.umask())).toBe(0o022);
      enterPrivateUmask();
      enterPrivateUmask(); // a second call keeps the person's umask, not atlas's own
      writeFileSync(join(dir, 'atlas.txt'), 'x');
      expect(statSync(join(dir, 'atlas.txt')).mode & 0o777).toBe(0o600);
      const seen = withPersonUmask(() => {
        writeFileSync(join(dir, 'person.txt'), 'x');
        return process.umask();
      });
      expect(seen).toBe(0o022);
      expect(statSync(join(dir, 'person.txt')).mode & 0o777).toBe(0o644);
      expect(process.umask()).toBe(0o077);
      expect(() =>
        withPersonUmask(() => {
          throw new Error('spawn failed');
        }),
      ).toThrow('spawn failed');
      expect(process.umask()).toBe(0o077);
      // Files and folders made for the person get their umask's modes; atlas's own stay private.
      expect(personMode(0o644)).toBe(0o644);
      expect(personMode(0o777)).toBe(0o755);
      expect(personMode(0o600)).toBeUndefined();
      mkdirForPerson(join(dir, 'a', 'b'));
      expect([statSync(join(dir, 'a')).mode & 0o777, statSync(join(dir, 'a', 'b')).mode & 0o777]).toEqual([0o755, 0o755]);
      writeFileAtomic(join(dir, 'bundle.json'), '{}', { mode: SHARED_FILE_MODE });
      writeFileAtomic(join(dir, 'hook.json'), '{}');
      await writeFileAtomicAsync(join(dir, 'report.xml'), '<x/>', { mode: SHARED_FILE_MODE });
      expect(['bundle.json', 'hook.json', 'report.xml'].map((f) => statSync(join(dir, f)).mode & 0o777)).toEqual([0o644, 0o600, 0o644]);
    } finally {
      process.umask(before);
    }
  });
});

describe('continuedTaskMode', () => {
  it('keeps the recorded mode, lets a flag change it (saying so, recording it), and leaves old tasks to the config', async () => {
    const home = tempDir();
    dirs.push(home);
    const { ref, task } = await createFixtureTask({ home, repo: makeGitRepo() });
    const said: string[] = [];
    const say = (line: string) => said.push(line);
    expect(await continuedTaskMode(ref.dir, task, undefined, say)).toBeUndefined();
    expect(await continuedTaskMode(ref.dir, task, 'sandbox', say)).toBe('sandbox');
    expect(said).toEqual([]);
    const local = { ...task, execution_mode: 'local' as const };
    expect(await continuedTaskMode(ref.dir, local, undefined, say)).toBe('local');
    expect(await continuedTaskMode(ref.dir, local, 'local', say)).toBe('local');
    expect(said).toEqual([]);
    expect(await continuedTaskMode(ref.dir, local, 'sandbox', say)).toBe('sandbox');
    expect(said).toEqual([`task ${task.id} ran in local mode; --sandbox runs it in sandbox mode from now on`]);
    expect(readTask(ref.dir).execution_mode).toBe('sandbox');
  });
});
