// A sandboxed step's $HOME is a private, writable folder of the task's own: tools that keep caches
// there work (nyc through spawn-wrap writes ~/.node-spawn-wrap-*; before, EROFS), nothing reaches the
// person's home, and the person's git and npm configuration comes along without its credentials.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gitConfigWithoutSecrets, npmrcWithoutSecrets, prepareSandboxHome } from '../src/exec/sandbox/sandbox-home.js';
import { tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';
import { attempts, commandStep, onlyTask, prepareAttack, startSandboxed, writeTemplate } from './helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

const GITCONFIG =
  '[user]\n\tname = Pat Example\n\temail = pat@example.com\n[credential]\n\thelper = store --file /secret/git-creds\n[url "https://x-token:ghp_SECRET1@github.com/"]\n\tinsteadOf = https://github.com/\n[http "https://example.com"]\n\textraHeader = Authorization: Bearer SECRET2\n[alias]\n\tco = checkout\n';
const NPMRC = 'registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=npm_SECRET3\n_auth=SECRET4\nfund=false\n';

function userHome(): string {
  const home = tempDir('atlas-user-home-');
  writeFileSync(join(home, '.gitconfig'), GITCONFIG);
  writeFileSync(join(home, '.npmrc'), NPMRC);
  return home;
}

describe.skipIf(skipSandbox)("the sandbox's home", { timeout: 120_000 }, () => {
  it("is private and writable; the person's git and npm settings come without credentials; the real home stays untouched", async () => {
    const attack = prepareAttack();
    const home = userHome();
    const script = [
      'echo "HOME=$HOME"',
      // What spawn-wrap (nyc) does: a folder of its own in the home.
      'mkdir -p "$HOME/.node-spawn-wrap-1-abc" && echo shim > "$HOME/.node-spawn-wrap-1-abc/node" && echo "CACHE ok"',
      'echo "NAME=$(git config --global user.name) ALIAS=$(git config --global alias.co)"',
      'echo "HELPER=$(git config --global credential.helper)"',
      'cat "$HOME/.gitconfig" "$HOME/.npmrc"',
      attempts({ 'real-home': `echo x > ${join(home, 'planted')}` }),
    ].join('\n');
    writeTemplate(attack, commandStep('tools', script));
    const run = await startSandboxed({ ...attack, env: { ...attack.env, HOME: home } });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const task = onlyTask(attack.home);
    expect(run.stdout).toContain(`HOME=${join(task.dir, 'home')}`);
    expect(run.stdout).toContain('CACHE ok');
    expect(readFileSync(join(task.dir, 'home', '.node-spawn-wrap-1-abc', 'node'), 'utf8')).toBe('shim\n');
    expect(run.stdout).toContain('NAME=Pat Example ALIAS=checkout');
    expect(run.stdout).toMatch(/HELPER=\s*$/m);
    expect(run.stdout).toContain('registry=https://registry.npmjs.org/');
    expect(run.stdout).toMatch(/REFUSED real-home/);
    for (const secret of ['SECRET1', 'SECRET2', 'SECRET3', 'SECRET4', '/secret/git-creds']) expect(run.stdout).not.toContain(secret);
    expect(readdirSync(home).sort()).toEqual(['.gitconfig', '.npmrc']);
  });
});

describe("the private home's files", () => {
  it('drops credential sections and lines, keeps the rest', () => {
    const git = gitConfigWithoutSecrets(GITCONFIG);
    expect(git).toContain('name = Pat Example');
    expect(git).toContain('co = checkout');
    expect(git).not.toMatch(/SECRET|credential|helper|insteadOf/);
    expect(npmrcWithoutSecrets(NPMRC)).toBe('registry=https://registry.npmjs.org/\nfund=false\n');
  });

  it("follows the real home: a removed file goes, agent state is linked, a step's stand-in is replaced", () => {
    const real = userHome();
    mkdirSync(join(real, '.claude'));
    const taskDir = tempDir();
    const home = prepareSandboxHome(taskDir, real, [join(real, '.claude'), '/elsewhere/.claude.json']);
    expect(readFileSync(join(home, '.npmrc'), 'utf8')).not.toContain('SECRET');
    expect(existsSync(join(home, '.claude'))).toBe(true);
    writeFileSync(join(real, '.npmrc'), 'x=1\n');
    // A step replaced the link with a folder of its own; the person removed ~/.gitconfig.
    rmSync(join(home, '.claude'));
    mkdirSync(join(home, '.claude'));
    rmSync(join(real, '.gitconfig'));
    prepareSandboxHome(taskDir, real, [join(real, '.claude')]);
    expect(lstatSync(join(home, '.claude')).isSymbolicLink()).toBe(true);
    expect(existsSync(join(home, '.gitconfig'))).toBe(false);
    expect(readFileSync(join(home, '.npmrc'), 'utf8')).toBe('x=1\n');
  });

  it('never writes or removes through a link a step put in the home', () => {
    const real = userHome();
    mkdirSync(join(real, '.config', 'git'), { recursive: true });
    writeFileSync(join(real, '.config', 'git', 'config'), GITCONFIG);
    const taskDir = tempDir();
    const home = prepareSandboxHome(taskDir, real, []);
    // The step's move: .config points at a folder outside, where a git/config already lies.
    const elsewhere = tempDir('atlas-elsewhere-');
    mkdirSync(join(elsewhere, 'git'));
    writeFileSync(join(elsewhere, 'git', 'config'), 'theirs\n');
    rmSync(join(home, '.config'), { recursive: true });
    symlinkSync(elsewhere, join(home, '.config'));
    prepareSandboxHome(taskDir, real, []);
    expect(readFileSync(join(elsewhere, 'git', 'config'), 'utf8')).toBe('theirs\n');
    expect(lstatSync(join(home, '.config')).isDirectory()).toBe(true);
    expect(readFileSync(join(home, '.config', 'git', 'config'), 'utf8')).toContain('Pat Example');
    // Gone from the real home: removed from the private one, not from where a link points.
    rmSync(join(home, '.config'), { recursive: true });
    symlinkSync(elsewhere, join(home, '.config'));
    rmSync(join(real, '.config'), { recursive: true });
    prepareSandboxHome(taskDir, real, []);
    expect(readFileSync(join(elsewhere, 'git', 'config'), 'utf8')).toBe('theirs\n');
  });
});
