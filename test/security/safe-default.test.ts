// The safe mode is the default: `atlas init` makes execution.mode sandbox where the sandbox can
// run (--no-interactive picks it; --local opts out; a mode already set is kept), a later
// `atlas start` without flags then runs the hostile step sandboxed, and `atlas status` and HOOK.md
// say how each step ran.
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { findExecutable } from '../../src/agent/find-executable.js';
import { atlas, tempDir } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import { attempts, commandStep, onlyTask, prepareAttack, stolen, writeTemplate } from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

describe.skipIf(skipSandbox)('atlas init picks the sandbox', { timeout: 120_000 }, () => {
  it('--no-interactive writes execution.mode: sandbox; a plain start then runs sandboxed; status and HOOK.md show it', async () => {
    const attack = prepareAttack();
    const init = await atlas(['init', '--no-hooks', '--no-interactive'], { cwd: attack.repo, env: attack.env });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain('execution mode: sandbox by default');
    expect(init.stdout).toContain('--local');
    expect(readFileSync(join(attack.home, 'config.yaml'), 'utf8')).toMatch(/^execution:\n {2}mode: sandbox$/m);
    const outside = join(attack.loot, 'written-from-step');
    writeTemplate(
      attack,
      commandStep('hostile', `${attempts({ outside: `cp ${join(attack.home, 'keys', 'canary.key')} ${outside}` })}\necho done > done.txt`),
    );
    const run = await atlas(['start', 't', 'red team', '--no-interactive'], { cwd: attack.repo, env: attack.env });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/\| REFUSED outside/);
    expect(stolen(attack)).toBe(false);
    const task = onlyTask(attack.home);
    expect(JSON.parse(readFileSync(join(task.dir, 'execution.json'), 'utf8')).mode).toBe('sandbox');
    expect(readFileSync(join(task.dir, 'HOOK.md'), 'utf8')).toMatch(/\| 1 \| hostile \| command \| done \(sandbox\) \|/);
    const status = await atlas(['status', '--all'], { cwd: attack.repo, env: attack.env });
    expect(status.stdout).toMatch(/MODE/);
    expect(status.stdout).toMatch(/1\/1\s+sandbox/);
  });

  it('--local opts out; a mode already in config.yaml is kept; a machine without the sandbox stays local', async () => {
    const home = tempDir('atlas-sec-home-');
    const local = await atlas(['init', '--no-hooks', '--local'], { cwd: tempDir(), env: { ATLAS_HOME: home } });
    expect(local.stdout).toContain('execution mode: local');
    expect(readFileSync(join(home, 'config.yaml'), 'utf8')).toMatch(/^ {2}mode: local$/m);
    const again = await atlas(['init', '--no-hooks', '--no-interactive'], { cwd: tempDir(), env: { ATLAS_HOME: home } });
    expect(again.stdout).toContain('execution mode: local (already set in config.yaml)');

    const bare = tempDir('atlas-sec-home-');
    writeFileSync(join(bare, 'config.yaml'), 'execution:\n  sandbox:\n    allowed_domains: []\n');
    const section = await atlas(['init', '--no-hooks', '--no-interactive'], { cwd: tempDir(), env: { ATLAS_HOME: bare } });
    expect(section.stdout).toContain('execution mode: not changed');

    const bin = tempDir('atlas-bin-');
    symlinkSync(findExecutable('git')!, join(bin, 'git'));
    const noTools = tempDir('atlas-sec-home-');
    const cannot = await atlas(['init', '--no-hooks', '--no-interactive'], { cwd: tempDir(), env: { ATLAS_HOME: noTools, PATH: bin } });
    expect(cannot.stdout).toContain('this machine cannot run the sandbox');
    expect(readFileSync(join(noTools, 'config.yaml'), 'utf8')).not.toMatch(/^execution:/m);
  });
});
