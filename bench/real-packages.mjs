// Real repositories in the sandbox (issue 35): the test suites of three real npm packages, with
// their own dev dependencies (eslint, nyc through spawn-wrap, tape, aud), run outside atlas and
// then under `atlas start check --sandbox` (sandbox mode, the person's `atlas init` default). The
// target: each passes in the sandbox exactly as it does outside. Installs come from the registry
// through npm's cache (the first run downloads about 550 packages; later ones reuse the cache).
// Usage: node bench/real-packages.mjs [package@version ...]
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ATLAS, git, tempDir } from './lib.mjs';

const packages = process.argv.length > 2 ? process.argv.slice(2) : ['minimist@1.2.8', 'function-bind@1.1.2', 'is-callable@1.2.7'];

function run(command, args, options) {
  const t0 = performance.now();
  const r = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  return { code: r.status ?? -1, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, ms: performance.now() - t0 };
}

const ping = run('npm', ['view', 'minimist@1.2.8', 'version'], {});
if (ping.code !== 0) {
  console.log(`   the npm registry is not reachable (${ping.out.trim().split('\n').pop()}): nothing to measure`);
  process.exit(process.env.CI ? 1 : 0);
}

let missed = 0;
for (const spec of packages) {
  const dir = tempDir('atlas-bench-pkg-');
  const packed = run('npm', ['pack', spec, '--silent'], { cwd: dir });
  if (packed.code !== 0) throw new Error(`npm pack ${spec}: ${packed.out}`);
  const tarball = readdirSync(dir).find((n) => n.endsWith('.tgz'));
  const repo = join(dir, 'package');
  run('tar', ['xzf', tarball], { cwd: dir });
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'bench@example.com');
  git(repo, 'config', 'user.name', 'Bench');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', spec);
  // Dev dependencies as a person installs them (`npm install`, lifecycle scripts included).
  const install = run('npm', ['install', '--no-audit', '--no-fund'], { cwd: repo });
  if (install.code !== 0) throw new Error(`npm install in ${spec}: ${install.out}`);
  const outside = run('npm', ['test'], { cwd: repo });
  git(repo, 'clean', '-qfdx', '-e', 'node_modules');
  const home = tempDir('atlas-bench-pkg-home-');
  const inside = run(process.execPath, [ATLAS, 'start', 'check', spec, '--no-interactive', '--sandbox'], {
    cwd: repo,
    env: { ...process.env, ATLAS_HOME: home },
  });
  const same = outside.code === inside.code;
  if (!same || inside.code !== 0) missed++;
  console.log(
    `   ${spec.padEnd(20)} install ${(install.ms / 1000).toFixed(1)} s; npm test outside: exit ${outside.code} (${(outside.ms / 1000).toFixed(1)} s); atlas start check --sandbox: exit ${inside.code} (${(inside.ms / 1000).toFixed(1)} s)   target: passes as outside  ${same && inside.code === 0 ? 'ok' : 'MISSED'}`,
  );
  if (!same || inside.code !== 0)
    console.log(
      inside.out
        .split('\n')
        .slice(-25)
        .map((l) => `      ${l}`)
        .join('\n'),
    );
  rmSync(dir, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
}
process.exit(missed > 0 ? 1 : 0);
