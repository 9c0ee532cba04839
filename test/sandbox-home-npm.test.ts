// A real npm package that keeps state in the home folder, in the sandbox as outside it: spawn-wrap
// (what nyc uses to follow child processes) writes its shims to ~/.node-spawn-wrap-*, which failed
// with EROFS when a sandboxed step's $HOME was the person's read-only one. Installed from the
// registry through npm's cache; skipped (saying why) only when the registry is unreachable outside
// CI. bench/real-packages.mjs runs three whole real suites (minimist with nyc among them).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { atlas, git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';

const registry = spawnSync('npm', ['view', 'spawn-wrap@2.0.0', 'version', '--prefer-offline'], { encoding: 'utf8', timeout: 60_000 });
const unreachable = registry.status !== 0 && !process.env['CI'];
if (unreachable)
  process.stderr.write(
    `sandbox-home-npm skipped: the npm registry is not reachable (${(registry.stderr || String(registry.error)).trim().split('\n').pop()}); CI never skips it\n`,
  );

beforeAll(() => ensureBuilt());

const TEST = `const sw = require('spawn-wrap');
const { execFile } = require('node:child_process');
const unwrap = sw([require.resolve('./shim.js')]);
execFile(process.execPath, [require.resolve('./child.js')], (error, stdout, stderr) => {
  unwrap();
  if (error || !stdout.includes('wrapped') || !stdout.includes('child ran')) {
    console.log('spawn-wrap failed:', error && error.message, stdout, stderr);
    process.exit(1);
  }
  console.log('spawn-wrap ok');
});
`;
describe.skipIf(skipSandbox || unreachable)('a real package that writes to $HOME, in the sandbox', { timeout: 240_000 }, () => {
  it('passes under atlas start check --sandbox as it does outside atlas', async () => {
    const repo = makeGitRepo({
      'package.json': `${JSON.stringify({ name: 'home-user', version: '1.0.0', private: true, scripts: { test: 'node test.js' }, devDependencies: { 'spawn-wrap': '2.0.0' } }, null, 2)}\n`,
      'test.js': TEST,
      'child.js': "console.log('child ran');\n",
      'shim.js': "console.log('wrapped');\nrequire('spawn-wrap').runMain();\n",
      '.gitignore': 'node_modules/\n',
    });
    const install = spawnSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: repo, encoding: 'utf8' });
    expect(install.status, install.stderr).toBe(0);
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'lockfile');
    const outside = spawnSync('npm', ['test'], { cwd: repo, encoding: 'utf8' });
    expect(outside.stdout, outside.stdout + outside.stderr).toContain('spawn-wrap ok');
    const home = tempDir('atlas-home-');
    writeFileSync(join(home, 'config.yaml'), 'execution:\n  mode: sandbox\n');
    const inside = await atlas(['start', 'check', 'suite', '--no-interactive'], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(inside.stdout + inside.stderr).toContain('spawn-wrap ok');
    expect(inside.code, inside.stdout + inside.stderr).toBe(outside.status);
  });
});
