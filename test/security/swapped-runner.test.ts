// Attack 3: a sandboxed step swaps a gitignored tool (node_modules/.bin/mocha) for a script that
// prints "42 passing". In the working tree the receipt of `npm test` then passes although the real
// suite fails, and strict verify accepts it. With validation.tree: pristine the command runs on a
// fresh copy of the tree's files with dependencies the step could not write (built by
// validation.setup and cached, or the main checkout's), the real runner fails, and
// `atlas verify --require-pristine` refuses receipts made in the working tree.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { atlas, git } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import type { Attack } from '../helpers/security-fixtures.js';
import { commandStep, onlyTask, prepareAttack, startSandboxed, writeTemplate } from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

/** The real runner: the suite fails. */
const REAL_RUNNER = '#!/bin/sh\necho "0 passing"\necho "1 failing"\nexit 1\n';
const SWAP = [
  'rm -rf node_modules/.bin',
  'mkdir -p node_modules/.bin',
  `printf '#!/bin/sh\\necho "42 passing"\\n' > node_modules/.bin/mocha`,
  'chmod +x node_modules/.bin/mocha',
  'echo swapped',
].join(' && ');
/** Stands in for `npm ci`: installs the committed runner (no network in tests). */
const SETUP = 'mkdir -p node_modules/.bin && cp tools/mocha node_modules/.bin/mocha && chmod +x node_modules/.bin/mocha && echo installed';

function repository(): Attack {
  const attack = prepareAttack({
    files: {
      'package.json': `${JSON.stringify({ name: 'victim', version: '1.0.0', scripts: { test: 'mocha' } })}\n`,
      'package-lock.json': `${JSON.stringify({ name: 'victim', lockfileVersion: 3, packages: {} })}\n`,
      'tools/mocha': REAL_RUNNER,
      '.gitignore': 'node_modules/\n',
    },
  });
  // The user's own installed dependencies in the main checkout.
  mkdirSync(join(attack.repo, 'node_modules', '.bin'), { recursive: true });
  writeFileSync(join(attack.repo, 'node_modules', '.bin', 'mocha'), REAL_RUNNER, { mode: 0o755 });
  writeTemplate(attack, `${commandStep('swap', SWAP)}  - name: validate\n    type: validation\n    commands: ["npm test"]\n`);
  git(attack.repo, 'status', '--porcelain');
  return attack;
}

const STRICT = ['--require-sandbox', '--require-pass', '--require-command', 'npm test', '--require-step', 'validate'];

async function verify(attack: Attack, extra: string[] = []) {
  const { dir } = onlyTask(attack.home);
  return atlas(['verify', join(dir, 'hook.json'), ...STRICT, ...extra, '--json'], { cwd: attack.repo, env: attack.env });
}

function receipts(attack: Attack): Record<string, unknown>[] {
  return JSON.parse(onlyTask(attack.home).hookText).receipts;
}

describe.skipIf(skipSandbox)('a swapped test runner', { timeout: 180_000 }, () => {
  it('in the working tree: the fake runner passes, and only --require-pristine refuses the receipt', async () => {
    const attack = repository();
    const result = await startSandboxed(attack);
    expect(result.stdout).toContain('swapped');
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(receipts(attack)).toMatchObject([
      {
        command: 'npm test',
        exit_code: 0,
        execution_mode: 'sandbox',
        validation_tree: 'worktree',
        dependencies: 'worktree',
        message_version: 4,
      },
    ]);
    expect((await verify(attack)).code).toBe(0);
    const strict = await verify(attack, ['--require-pristine']);
    expect(strict.code).toBe(1);
    expect(JSON.parse(strict.stdout).policies).toContainEqual(expect.objectContaining({ policy: 'require-pristine', ok: false }));
  });

  it('pristine with validation.setup: the real runner runs and fails; the setup is cached where no step can write', async () => {
    const attack = repository();
    const config = ['-c', 'validation.tree=pristine', '-c', `validation.setup=${JSON.stringify([SETUP])}`];
    const result = await startSandboxed(attack, config);
    expect(result.stdout).toContain('swapped');
    expect(result.stdout).toContain('installed');
    expect(result.stdout).toContain('1 failing');
    expect(result.code).not.toBe(0);
    const [receipt] = receipts(attack);
    expect(receipt).toMatchObject({
      command: 'npm test',
      exit_code: 1,
      execution_mode: 'sandbox',
      validation_tree: 'pristine',
      message_version: 4,
    });
    expect(receipt!['dependencies']).toMatch(/^setup:[0-9a-f]{64}$/);
    const verdict = await verify(attack, ['--require-pristine']);
    expect(verdict.code).toBe(1);
    expect(JSON.parse(verdict.stdout).policies).toContainEqual(expect.objectContaining({ policy: 'require-pass', ok: false }));
    // The cache entry holds the runner the setup installed; the pristine tree is gone.
    const cache = join(attack.home, 'cache', 'validation');
    expect(readdirSync(cache).filter((n) => /^[0-9a-f]{64}$/.test(n))).toEqual([String(receipt!['dependencies']).slice('setup:'.length)]);
    expect(existsSync(join(onlyTask(attack.home).dir, 'pristine'))).toBe(false);
  });

  it("pristine without a setup: the main checkout's folders, which the sandbox cannot write", async () => {
    const attack = repository();
    const result = await startSandboxed(attack, ['-c', 'validation.tree=pristine']);
    expect(result.stdout).toContain('1 failing');
    expect(result.code).not.toBe(0);
    expect(receipts(attack)).toMatchObject([{ exit_code: 1, validation_tree: 'pristine', dependencies: 'repository' }]);
  });

  it('a later task cannot poison the cached dependencies from its sandbox', async () => {
    const attack = repository();
    const config = ['-c', 'validation.tree=pristine', '-c', `validation.setup=${JSON.stringify([SETUP])}`];
    expect((await startSandboxed(attack, config)).stdout).toContain('installed');
    const poison =
      'for f in "$ATLAS_HOME"/cache/validation/*/node_modules/.bin/mocha; do if printf "#!/bin/sh\\necho 42 passing\\n" > "$f"; then echo POISONED; else echo REFUSED; fi; done';
    writeTemplate(attack, `${commandStep('poison', poison)}  - name: validate\n    type: validation\n    commands: ["npm test"]\n`);
    const second = await startSandboxed(attack, config);
    expect(second.stdout).toMatch(/\| REFUSED/);
    expect(second.stdout).not.toMatch(/\| POISONED/);
    expect(second.stdout).not.toContain('installed');
    expect(second.stdout).toContain('1 failing');
  });
});
