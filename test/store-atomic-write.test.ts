import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../src/store/atomic-write.js';
import { compileFixture } from './helpers/compile-fixture.js';
import { tempDir } from './helpers/core-fixtures.js';

describe('atomic writes', () => {
  let writer: string;
  beforeAll(async () => {
    writer = await compileFixture('test/fixtures/crash-writer.ts');
  });

  it('a process killed between write and rename leaves the old file whole', () => {
    const dir = tempDir();
    const path = join(dir, 'hook.json');
    const original = JSON.stringify({ state: 'step_running', history: ['a', 'b'] });
    writeFileSync(path, original);
    const result = spawnSync(process.execPath, [writer, path, JSON.stringify({ state: 'completed' })]);
    expect(result.signal).toBe('SIGKILL');
    expect(readFileSync(path, 'utf8')).toBe(original);
    expect(JSON.parse(readFileSync(path, 'utf8')).state).toBe('step_running');
  });

  it('a completed write replaces the file whole and leaves no temp files', () => {
    const dir = tempDir();
    const path = join(dir, 'hook.json');
    writeFileSync(path, 'old');
    writeFileAtomic(path, 'new content');
    expect(readFileSync(path, 'utf8')).toBe('new content');
    expect(readdirSync(dir)).toEqual(['hook.json']);
  });

  it('writes text given in pieces as they come; a failure midway keeps the old file and no temp file', () => {
    const dir = tempDir();
    const path = join(dir, 'state');
    writeFileAtomic(
      path,
      (function* () {
        yield 'é'.repeat(3);
        yield Buffer.from(' and bytes');
        yield '';
      })(),
    );
    expect(readFileSync(path, 'utf8')).toBe('ééé and bytes');
    const failing = function* () {
      yield 'half';
      throw new Error('the pieces ran out');
    };
    expect(() => writeFileAtomic(path, failing())).toThrow('the pieces ran out');
    expect(readFileSync(path, 'utf8')).toBe('ééé and bytes');
    expect(readdirSync(dir)).toEqual(['state']);
  });

  it('a failed rename removes its temp file and keeps the old content', () => {
    const dir = tempDir();
    const path = join(dir, 'hook.json');
    writeFileSync(path, 'old');
    expect(() =>
      writeFileAtomic(path, 'new', {
        beforeRename: () => {
          throw new Error('disk full');
        },
      }),
    ).toThrow('disk full');
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(readdirSync(dir)).toEqual(['hook.json']);
  });
});
