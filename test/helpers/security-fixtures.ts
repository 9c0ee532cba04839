// The red-team suite's setting: a real repository, an ATLAS_HOME holding a canary "key", and a
// template whose command step is the hostile agent. A payload, if anything ever runs it outside
// the sandbox, copies the canary into a loot folder; an attack succeeded when the loot holds it.

import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { listTaskRefs } from '../../src/store/task-store.js';
import { atlas, git, makeGitRepo, tempDir } from './core-fixtures.js';

export interface Attack {
  home: string;
  repo: string;
  loot: string;
  canary: string;
  /** A shell script that copies the canary into the loot folder (if it can read it). */
  payload: string;
  env: NodeJS.ProcessEnv;
}

export function prepareAttack(options: { files?: Record<string, string> } = {}): Attack {
  const home = tempDir('atlas-sec-home-');
  mkdirSync(join(home, 'keys'), { recursive: true, mode: 0o700 });
  const canary = `CANARY-${randomBytes(8).toString('hex')}`;
  writeFileSync(join(home, 'keys', 'canary.key'), canary, { mode: 0o600 });
  const loot = tempDir('atlas-sec-loot-');
  const payload = join(tempDir('atlas-sec-payload-'), 'steal.sh');
  writeFileSync(payload, `#!/bin/sh\ncat ${join(home, 'keys', 'canary.key')} >> ${join(loot, 'stolen')} 2>/dev/null\nexit 0\n`);
  chmodSync(payload, 0o755);
  const repo = makeGitRepo();
  for (const [path, content] of Object.entries(options.files ?? {})) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), content, { mode: 0o755 });
  }
  if (options.files) {
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'files');
  }
  // Claude Code's config folder of the test's own (the policy makes its settings read-only).
  return { home, repo, loot, canary, payload, env: { ATLAS_HOME: home, CLAUDE_CONFIG_DIR: tempDir('atlas-sec-claude-') } };
}

/** Writes template `t` (committed) with the given steps; `inPlace` runs it in the checkout itself. */
export function writeTemplate(attack: Attack, steps: string, options: { inPlace?: boolean } = {}): void {
  mkdirSync(join(attack.repo, '.atlas', 'templates'), { recursive: true });
  writeFileSync(
    join(attack.repo, '.atlas', 'templates', 't.yaml'),
    `name: t\ndescription: red team\n${options.inPlace ? 'worktree: false\n' : ''}steps:\n${steps}`,
  );
  git(attack.repo, 'add', '-A');
  git(attack.repo, 'commit', '-q', '-m', 'template');
}

/** A command step running `script` (YAML-quoted). */
export function commandStep(name: string, script: string): string {
  return `  - name: ${name}\n    type: command\n    run: ${JSON.stringify([script])}\n`;
}

export const COMMIT_STEP = '  - name: commit\n    type: git\n    action: commit\n    message: "step work"\n';

/** Each attempt as a shell line printing REFUSED or WROTE <label>. */
export function attempts(tries: Record<string, string>): string {
  return Object.entries(tries)
    .map(([label, cmd]) => `if (${cmd}) >/dev/null 2>&1; then echo "WROTE ${label}"; else echo "REFUSED ${label}"; fi`)
    .join('\n');
}

export async function startSandboxed(attack: Attack, extra: string[] = []) {
  return atlas(['start', 't', 'red team', '--no-interactive', '--sandbox', ...extra], { cwd: attack.repo, env: attack.env });
}

/** What the attacks stole: the canary, if any payload ran outside the sandbox. */
export function stolen(attack: Attack): boolean {
  const file = join(attack.loot, 'stolen');
  return existsSync(file) && readFileSync(file, 'utf8').includes(attack.canary);
}

/** What the user does next, outside the sandbox: plain git in the tree. */
export function userGitActivity(tree: string): void {
  for (const args of [
    ['status', '--porcelain'],
    ['diff', 'HEAD'],
    ['log', '-1', '--stat'],
    ['add', '-A'],
  ]) {
    try {
      git(tree, ...args);
    } catch {
      // a refused layout may make git fail: what matters is that it ran nothing
    }
  }
}

/** The task folder and worktree of the (only) task in ATLAS_HOME. */
export function onlyTask(home: string): { dir: string; worktree: string; hookText: string } {
  const ref = listTaskRefs(home)[0]!;
  const task = JSON.parse(readFileSync(join(ref.dir, 'task.json'), 'utf8')) as { worktree: string };
  return { dir: ref.dir, worktree: task.worktree, hookText: readFileSync(join(ref.dir, 'hook.json'), 'utf8') };
}
