// Pristine validation (issue 18): a validation-only task run with validation.tree: worktree and
// with validation.tree: pristine (warm dependency cache), interleaved, on the demo repository and
// on a clone of atlas's own (its type check, node_modules from the main checkout). Target: pristine
// costs <= 1.3x the worktree run. Sandboxed when the sandbox runs here, else local.
// Usage: node bench/pristine.mjs [rounds=5]
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ATLAS, git, makeRepo, ROOT, tempDir } from './lib.mjs';

const rounds = Number(process.argv[2] ?? 5);
const sandboxed = spawnSync('bwrap', ['--version']).status === 0 && spawnSync('socat', ['-V']).status === 0;
const mode = sandboxed ? '--sandbox' : '--local';

function template(repo, command) {
  mkdirSync(join(repo, '.atlas', 'templates'), { recursive: true });
  writeFileSync(
    join(repo, '.atlas', 'templates', 'v.yaml'),
    `name: v\ndescription: validate\nsteps:\n  - name: validate\n    type: validation\n    commands: [${JSON.stringify(command)}]\n`,
  );
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'validation template');
}

/** The demo project: a module, its test, a lockfile; its setup makes a node_modules. */
function demoRepo() {
  const repo = makeRepo();
  writeFileSync(join(repo, 'calc.mjs'), 'export function add(a, b) {\n  return a + b;\n}\n');
  writeFileSync(
    join(repo, 'test.mjs'),
    "import { add } from './calc.mjs';\nif (add(2, 3) !== 5) process.exit(1);\nconsole.log('1 test passed');\n",
  );
  writeFileSync(join(repo, 'package-lock.json'), '{"lockfileVersion":3}\n');
  writeFileSync(join(repo, '.gitignore'), 'node_modules/\n');
  template(repo, 'node test.mjs');
  return { repo, setup: ['mkdir -p node_modules/.bin && echo ok > node_modules/.bin/x'] };
}

/** atlas itself at HEAD, type-checked; node_modules is the main checkout's (a link to ours). */
function atlasRepo() {
  const repo = tempDir('atlas-bench-self-');
  git(ROOT, 'clone', '-q', '--no-hardlinks', ROOT, repo);
  git(repo, 'config', 'user.email', 'bench@example.com');
  git(repo, 'config', 'user.name', 'Bench');
  template(repo, 'node node_modules/typescript/bin/tsc --noEmit -p tsconfig.json');
  // Installed as a user's would be: a real (ignored) folder, here of links to ours.
  mkdirSync(join(repo, 'node_modules'));
  for (const entry of readdirSync(join(ROOT, 'node_modules')))
    symlinkSync(join(ROOT, 'node_modules', entry), join(repo, 'node_modules', entry));
  return { repo, setup: [] };
}

function run(repo, home, tree, setup) {
  const config = ['-c', `validation.tree=${tree}`, ...(setup.length ? ['-c', `validation.setup=${JSON.stringify(setup)}`] : [])];
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [ATLAS, 'start', 'v', 'bench', '--no-interactive', mode, ...config], {
    cwd: repo,
    env: { ...process.env, ATLAS_HOME: home },
    encoding: 'utf8',
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`atlas start (${tree}) exited ${r.status}: ${r.stdout}\n${r.stderr}`);
  return ms;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
let ok = true;
console.log(`   ${mode.slice(2)} mode, ${rounds} interleaved rounds, medians of a whole validation-only \`atlas start\`:`);
for (const [name, make] of [
  ['demo repository', demoRepo],
  ["atlas's own repository (tsc --noEmit)", atlasRepo],
]) {
  const { repo, setup } = make();
  const home = tempDir('atlas-bench-pristine-home-');
  run(repo, home, 'pristine', setup); // warms the dependency cache (and the file cache)
  const samples = { worktree: [], pristine: [] };
  for (let i = 0; i < rounds; i++) for (const tree of ['worktree', 'pristine']) samples[tree].push(run(repo, home, tree, setup));
  const w = median(samples.worktree);
  const p = median(samples.pristine);
  const ratio = p / w;
  ok &&= ratio <= 1.3;
  console.log(
    `   ${name.padEnd(40)} worktree ${w.toFixed(0)} ms, pristine ${p.toFixed(0)} ms (+${(p - w).toFixed(0)} ms): ${ratio.toFixed(2)}x   target <= 1.3x  ${ratio <= 1.3 ? 'ok' : 'MISSED'}`,
  );
  rmSync(repo, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
}
process.exit(ok ? 0 : 1);
