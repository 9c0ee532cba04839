// The fast path of `atlas hook status` and `atlas checkpoint` (src/cli/quick.ts, dist/quick.cjs):
// it runs only lines it fully understands, and they give what the full CLI gives.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quickCommand } from '../src/cli/quick.js';
import { atlasSync, createFixtureTask, makeGitRepo, REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';

describe('quickCommand', () => {
  it('takes hook status and checkpoint with their options and the global ones', () => {
    const status = quickCommand(['hook', 'status', '--task', 'task-1', '--json', '-c', 'a=b', '--config=c=d', '--verbose']);
    expect(status?.flags).toEqual({ json: true, config: ['a=b', 'c=d'], verbose: true });
    expect(status?.args).toEqual([{ task: 'task-1' }]);
    const checkpoint = quickCommand(['checkpoint', 'did it', '--quiet', '--commit=abc1', '--trigger', 'git_commit']);
    expect(checkpoint?.args).toEqual(['did it', { trigger: 'git_commit', quiet: true, commit: 'abc1' }]);
    expect(quickCommand(['checkpoint', 'x'])?.args).toEqual(['x', { trigger: 'manual' }]);
    expect(quickCommand(['checkpoint', '-', '--task', 'T'])?.args).toEqual(['-', { trigger: 'manual', task: 'T' }]);
    // The git hooks' line: options, then `--` and a description that may start with a dash.
    expect(quickCommand(['checkpoint', '--trigger', 'git_commit', '--commit', 'ab12', '--quiet', '--', '--amend: fix'])?.args).toEqual([
      '--amend: fix',
      { trigger: 'git_commit', commit: 'ab12', quiet: true },
    ]);
  });

  it('leaves every other line to the full CLI', () => {
    for (const argv of [
      ['status'],
      ['hook', 'export'],
      ['hook', 'status', '--help'],
      ['hook', 'status', '-h'],
      ['hook', 'status', 'extra'],
      ['hook', 'status', '--task'],
      ['hook', 'status', '--task', '--json'],
      ['hook', 'status', '--task', 'a', '--task', 'b'],
      ['hook', 'status', '--json', '--json'],
      ['hook', 'status', '--json=1'],
      ['hook', 'status', '--quiet'],
      ['hook', 'status', '--', 'x'],
      ['checkpoint', '--', 'a', 'b'],
      ['hook', 'status', '-x'],
      ['checkpoint'],
      ['checkpoint', 'a', 'b'],
      ['checkpoint', 'a', '--trigger', 'bogus'],
      ['checkpoint', 'a', '--quiet', '--quiet'],
      ['checkpoint', 'a', '--='],
      ['checkpoint', 'a', '--constructor', 'x'],
      ['hook', 'status', '--toString=1'],
    ]) {
      expect(quickCommand(argv), argv.join(' ')).toBeUndefined();
    }
  });
});

describe('the fast path, for real', () => {
  let base: string;
  beforeAll(() => {
    ensureBuilt();
    base = tempDir();
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('prints and exits as the full CLI does, for results and for errors', async () => {
    const home = join(base, 'home');
    const repo = makeGitRepo();
    const { ref } = await createFixtureTask({ home, repo });
    const env = { ATLAS_HOME: home };
    // "updated 405ms ago" differs between two runs: the ages are left out of the comparison.
    const plain = (r: { code: number; stdout: string; stderr: string }) => ({ ...r, stdout: r.stdout.replace(/\S+ ago/g, 'ago') });
    const full = (args: string[]) => {
      const r = spawnSync(process.execPath, [join(REPO_ROOT, 'dist', 'cli.js'), ...args], {
        cwd: repo,
        env: { ...process.env, ...env },
        encoding: 'utf8',
      });
      return plain({ code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr });
    };
    const fast = (args: string[]) => plain(atlasSync(args, { cwd: repo, env }));
    for (const args of [
      ['hook', 'status'],
      ['hook', 'status', '--json', '--task', ref.id],
      ['hook', 'status', '--task', 'nope'],
      ['checkpoint', 'x', '--task', 'nope', '--json'],
      ['checkpoint', '--trigger', 'git_commit', '--task', 'nope', '--', '-x'],
    ]) {
      expect(fast(args), args.join(' ')).toEqual(full(args));
    }
    const recorded = fast(['checkpoint', 'first step done', '--json']);
    expect(recorded.code).toBe(0);
    expect(JSON.parse(recorded.stdout)).toMatchObject({ checkpoint: { description: 'first step done', trigger: 'manual' } });
    // A line the fast path leaves alone still works: commander's error for a bad trigger.
    const bad = fast(['checkpoint', 'x', '--trigger', 'bogus']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('bogus');
  });

  it("bin/atlas.js (the README's `node bin/atlas.js`, older git hooks) runs the same executable as bin/atlas.cjs", () => {
    const home = join(base, 'home-js');
    const repo = makeGitRepo();
    const run = (bin: string, args: string[]) => {
      const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', bin), ...args], {
        cwd: repo,
        env: { ...process.env, ATLAS_HOME: home },
        encoding: 'utf8',
      });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    for (const args of [['--version'], ['hook', 'status'], ['checkpoint', 'x', '--task', 'nope'], ['nonsense']]) {
      expect(run('atlas.js', args), args.join(' ')).toEqual(run('atlas.cjs', args));
    }
    expect(run('atlas.cjs', ['--version']).stdout).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('says how to build when dist/ is missing (exit 2)', () => {
    const copy = tempDir();
    mkdirSync(join(copy, 'bin'));
    for (const bin of ['atlas.cjs', 'atlas.js']) copyFileSync(join(REPO_ROOT, 'bin', bin), join(copy, 'bin', bin));
    for (const bin of ['atlas.cjs', 'atlas.js']) {
      for (const args of [['status'], ['hook', 'status'], ['claude-hook']]) {
        const r = spawnSync(process.execPath, [join(copy, 'bin', bin), ...args], { encoding: 'utf8' });
        expect(r.status, `${bin} ${args.join(' ')}`).toBe(2);
        expect(r.stderr).toMatch(/atlas: .*dist.* is missing\nhint: run `npm run build` in the atlas checkout first/);
      }
    }
  });
});
