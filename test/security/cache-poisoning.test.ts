// Cache poisoning through a setup script: the pristine dependency cache is keyed on lockfiles and
// manifests, but the setup (`npm ci`) also runs the package's `prepare` script, a file no key
// covers. A hostile task edits scripts/prep.js so that the setup installs an always-passing test
// runner, lets pristine validation fill the cache, and reverts the file. Before the fix, every later
// honest task with the same lockfile linked that runner and got passing, pristine, sandboxed
// receipts for broken code. Now the cache is filled only from the commit the task started from,
// and a task whose setup inputs differ from its base builds its own dependencies, uncached.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { listTaskRefs } from '../../src/store/task-store.js';
import { atlas, git } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import type { Attack } from '../helpers/security-fixtures.js';
import { commandStep, prepareAttack } from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

/** The package's prepare script: installs the real runner, which runs test.js. */
const PREP = `const fs = require('node:fs');\nfs.mkdirSync('node_modules/.bin', { recursive: true });\nfs.writeFileSync('node_modules/.bin/runner', '#!/bin/sh\\nexec node test.js\\n', { mode: 0o755 });\nconsole.log('prepared');\n`;
/** The hostile edit: the runner it installs passes whatever the code does. */
const POISON = `cat > scripts/prep.js <<'EOF'\nconst fs = require('node:fs');\nfs.mkdirSync('node_modules/.bin', { recursive: true });\nfs.writeFileSync('node_modules/.bin/runner', '#!/bin/sh\\necho "all 42 passing"\\n', { mode: 0o755 });\nEOF\necho poisoned`;
/** Stands in for `npm ci` (no network in tests): what it runs of the package is its prepare script. */
const SETUP = 'node scripts/prep.js';
const VALIDATE = '  - name: validate\n    type: validation\n    commands: ["node_modules/.bin/runner"]\n';

function repository(): Attack {
  const attack = prepareAttack({
    files: {
      'package.json': `${JSON.stringify({ name: 'victim', version: '1.0.0', scripts: { prepare: 'node scripts/prep.js', test: 'runner' } })}\n`,
      'package-lock.json': `${JSON.stringify({ name: 'victim', lockfileVersion: 3, packages: {} })}\n`,
      'scripts/prep.js': PREP,
      'lib.js': 'module.exports = (a, b) => a + b;\n',
      'test.js':
        "const add = require('./lib.js');\nif (add(2, 2) !== 4) { console.log('1 failing'); process.exit(1); }\nconsole.log('1 passing');\n",
      '.gitignore': 'node_modules/\n',
    },
  });
  mkdirSync(join(attack.repo, '.atlas', 'templates'), { recursive: true });
  const template = (name: string, steps: string) =>
    writeFileSync(join(attack.repo, '.atlas', 'templates', `${name}.yaml`), `name: ${name}\ndescription: ${name}\nsteps:\n${steps}`);
  // The hostile task: poison the setup, let validation fill the cache, put the file back.
  template('poison', commandStep('poison', POISON) + VALIDATE + commandStep('revert', 'git checkout -- scripts/prep.js && echo reverted'));
  // An honest task whose change breaks the code.
  template('honest', commandStep('work', "echo 'module.exports = (a, b) => a - b;' > lib.js") + VALIDATE);
  // A task that changes the setup's inputs (the manifest) honestly.
  template(
    'manifest',
    commandStep(
      'work',
      "node -e \"const p=require('./package.json');p.description='x';require('fs').writeFileSync('package.json',JSON.stringify(p))\"",
    ) + VALIDATE,
  );
  git(attack.repo, 'add', '-A');
  git(attack.repo, 'commit', '-q', '-m', 'templates');
  return attack;
}

const PRISTINE = ['-c', 'validation.tree=pristine', '-c', `validation.setup=${JSON.stringify([SETUP])}`];

function start(attack: Attack, template: string) {
  return atlas(['start', template, template, '--no-interactive', '--sandbox', ...PRISTINE], { cwd: attack.repo, env: attack.env });
}

function receiptsOf(attack: Attack, template: string): Record<string, unknown>[] {
  for (const ref of listTaskRefs(attack.home)) {
    const task = JSON.parse(readFileSync(join(ref.dir, 'task.json'), 'utf8')) as { template: string };
    if (task.template === template) return JSON.parse(readFileSync(join(ref.dir, 'hook.json'), 'utf8')).receipts;
  }
  throw new Error(`no task of template ${template}`);
}

function cachedRunners(attack: Attack): string[] {
  const root = join(attack.home, 'cache', 'validation');
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((n) => /^[0-9a-f]{64}$/.test(n))
    .map((n) => readFileSync(join(root, n, 'node_modules', '.bin', 'runner'), 'utf8'));
}

describe.skipIf(skipSandbox)('poisoning the pristine dependency cache through a setup script', { timeout: 240_000 }, () => {
  it('a hostile task cannot fill the cache: the next honest task gets the real runner, which fails its broken code', async () => {
    const attack = repository();
    const poison = await start(attack, 'poison');
    expect(poison.stdout).toContain('poisoned');
    expect(poison.stdout).toContain('reverted');
    // What the cache holds was built from the commit the task started from, not from the step's edit.
    expect(cachedRunners(attack)).toEqual([expect.stringContaining('exec node test.js')]);

    const honest = await start(attack, 'honest');
    expect(honest.stdout).not.toContain('all 42 passing');
    expect(honest.stdout).toContain('1 failing');
    expect(honest.code).not.toBe(0);
    const [receipt] = receiptsOf(attack, 'honest');
    expect(receipt).toMatchObject({
      command: 'node_modules/.bin/runner',
      exit_code: 1,
      execution_mode: 'sandbox',
      validation_tree: 'pristine',
    });
    expect(receipt!['dependencies']).toBe(receiptsOf(attack, 'poison')[0]!['dependencies']);
  });

  it('a task whose setup inputs differ from its base builds its own dependencies, and caches nothing', async () => {
    const attack = repository();
    const changed = await start(attack, 'manifest');
    expect(changed.code, changed.stdout + changed.stderr).toBe(0);
    expect(changed.stdout).toContain('prepared');
    const [receipt] = receiptsOf(attack, 'manifest');
    expect(receipt).toMatchObject({ exit_code: 0, validation_tree: 'pristine' });
    expect(receipt!['dependencies']).toMatch(/^uncached:[0-9a-f]{64}$/);
    expect(cachedRunners(attack)).toEqual([]);
  });
});
