// validation.tree: pristine on this machine (local mode; the sandboxed attack is in
// test/security/swapped-runner.test.ts): the tree holds the task's new and changed files but none
// it ignores, the setup runs once per set of lockfiles, a failing setup stops the step before any
// receipt, and bad settings are refused with a hint.
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CACHE_ENTRIES_KEPT,
  cachedDependencies,
  cacheRoot,
  checkDependencyFolders,
  dependencyKey,
  repositoryDependencies,
} from '../src/engine/pristine/dependency-cache.js';
import { listTaskRefs } from '../src/store/task-store.js';
import { atlas, git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

const SETUP =
  'mkdir -p node_modules/.bin && printf "#!/bin/sh\\necho real runner \\$(cat ../VERSION 2>/dev/null)\\n" > node_modules/.bin/check && chmod +x node_modules/.bin/check && echo installed';

function repo(steps: string): string {
  const dir = makeGitRepo({
    'README.md': '# demo\n',
    '.gitignore': 'node_modules/\nsecret.txt\n',
    'package-lock.json': '{"lockfileVersion":3}\n',
  });
  mkdirSync(join(dir, '.atlas', 'templates'), { recursive: true });
  writeFileSync(join(dir, '.atlas', 'templates', 't.yaml'), `name: t\ndescription: pristine\nsteps:\n${steps}`);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'template');
  return dir;
}

const WORK =
  '  - name: work\n    type: command\n    run: ["echo new > NEW.md && echo changed >> README.md && echo hidden > secret.txt && mkdir -p node_modules/.bin && printf \'#!/bin/sh\\\\necho fake\\\\n\' > node_modules/.bin/check && chmod +x node_modules/.bin/check"]\n';
const VALIDATE = (commands: string[]) => `  - name: validate\n    type: validation\n    commands: ${JSON.stringify(commands)}\n`;

function receiptsOf(home: string, n = 0): Record<string, unknown>[] {
  const refs = listTaskRefs(home).sort((a, b) => a.id.localeCompare(b.id));
  return JSON.parse(readFileSync(join(refs[n]!.dir, 'hook.json'), 'utf8')).receipts;
}

describe('pristine validation on this machine', { timeout: 120_000 }, () => {
  it('sees new and changed files, not ignored ones; runs the setup once per lockfiles; signs the tree and the dependencies', async () => {
    const dir = repo(
      WORK +
        VALIDATE([
          'test -f NEW.md',
          'grep -q changed README.md',
          'test ! -e secret.txt',
          'node_modules/.bin/check | grep -q "real runner"',
          'test ! -d .git',
        ]),
    );
    const home = tempDir('atlas-home-');
    const args = ['--no-interactive', '--local', '-c', 'validation.tree=pristine', '-c', `validation.setup=${JSON.stringify([SETUP])}`];
    const first = await atlas(['start', 't', 'one', ...args], { cwd: dir, env: { ATLAS_HOME: home } });
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toContain('installed');
    const receipts = receiptsOf(home);
    expect(receipts).toHaveLength(5);
    for (const r of receipts)
      expect(r).toMatchObject({ exit_code: 0, validation_tree: 'pristine', execution_mode: 'local', message_version: 4 });
    const second = await atlas(['start', 't', 'two', ...args], { cwd: dir, env: { ATLAS_HOME: home } });
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).not.toContain('installed');
    expect(receiptsOf(home, 1)[0]!['dependencies']).toBe(receipts[0]!['dependencies']);
    const verify = await atlas(['verify', join(listTaskRefs(home)[0]!.dir, 'hook.json'), '--require-pristine', '--require-pass'], {
      cwd: dir,
      env: { ATLAS_HOME: home },
    });
    expect(verify.code, verify.stdout).toBe(0);
    expect(verify.stdout).toMatch(/pristine tree, dependencies setup:[0-9a-f]{12}/);
  });

  it('a failing setup fails the step with no receipt and nothing cached; a bad folder name is refused', async () => {
    const dir = repo(VALIDATE(['true']));
    const home = tempDir('atlas-home-');
    const failed = await atlas(
      ['start', 't', 'x', '--no-interactive', '--local', '-c', 'validation.tree=pristine', '-c', 'validation.setup=["echo nope; exit 3"]'],
      { cwd: dir, env: { ATLAS_HOME: home } },
    );
    expect(failed.code).not.toBe(0);
    expect(failed.stdout + failed.stderr).toContain('validation.setup failed: `echo nope; exit 3` exited with code 3');
    expect(receiptsOf(home)).toEqual([]);
    expect(existsSync(cacheRoot(home))).toBe(false);
    const bad = await atlas(
      ['start', 't', 'y', '--no-interactive', '--local', '-c', 'validation.tree=pristine', '-c', 'validation.dependencies=["../outside"]'],
      { cwd: dir, env: { ATLAS_HOME: home } },
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stdout + bad.stderr).toContain('validation.dependencies: "../outside" is not a folder inside the repository');
  });
});

describe('the dependency cache', () => {
  it('keys on the setup, the folders and the lockfiles', () => {
    const tree = tempDir();
    writeFileSync(join(tree, 'package-lock.json'), 'a');
    const key = dependencyKey(tree, ['npm ci'], ['node_modules']);
    expect(dependencyKey(tree, ['npm ci'], ['node_modules'])).toBe(key);
    expect(dependencyKey(tree, ['npm install'], ['node_modules'])).not.toBe(key);
    expect(dependencyKey(tree, ['npm ci'], ['.venv'])).not.toBe(key);
    writeFileSync(join(tree, 'package-lock.json'), 'b');
    expect(dependencyKey(tree, ['npm ci'], ['node_modules'])).not.toBe(key);
  });

  it('accepts folder names inside the tree only', () => {
    expect(checkDependencyFolders(['node_modules', 'vendor/bundle/', '.venv'])).toEqual(['node_modules', 'vendor/bundle', '.venv']);
    for (const bad of ['', '/abs', '..', '../x', 'a/../../b', '.'])
      expect(() => checkDependencyFolders([bad])).toThrow(/is not a folder inside the repository/);
  });

  it(`keeps the ${CACHE_ENTRIES_KEPT} most recently used entries and drops a killed run's staging folder`, async () => {
    const home = tempDir();
    const root = cacheRoot(home);
    mkdirSync(join(root, '.tmp-stale'), { recursive: true });
    utimesSync(join(root, '.tmp-stale'), new Date(0), new Date(0));
    const keys: string[] = [];
    for (let i = 0; i <= CACHE_ENTRIES_KEPT; i++) {
      const tree = tempDir();
      writeFileSync(join(tree, 'package-lock.json'), String(i));
      const made = await cachedDependencies(home, tree, ['setup'], ['node_modules'], async () => {
        mkdirSync(join(tree, 'node_modules'));
        writeFileSync(join(tree, 'node_modules', 'dep.js'), `${i}\n`);
        return tree;
      });
      expect(made.built).toBe(true);
      expect(readFileSync(join(tree, 'node_modules', 'dep.js'), 'utf8')).toBe(`${i}\n`);
      keys.push(made.source.slice('setup:'.length));
      utimesSync(join(root, keys[i]!), new Date(1000 * (i + 1)), new Date(1000 * (i + 1)));
    }
    const left = readdirSync(root);
    expect(left).not.toContain('.tmp-stale');
    expect(left.sort()).toEqual(keys.slice(1).sort());
  });

  it("links nothing for a task in the checkout itself, the main checkout's folders for one in a worktree", () => {
    const main = tempDir();
    mkdirSync(join(main, 'node_modules'));
    const tree = tempDir();
    expect(repositoryDependencies(tree, main, true, ['node_modules'])).toBe('none');
    expect(repositoryDependencies(tree, main, false, ['.venv'])).toBe('none');
    expect(repositoryDependencies(tree, main, false, ['node_modules', '.venv'])).toBe('repository');
  });
});
