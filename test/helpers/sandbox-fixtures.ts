// Sandbox tests run the real sandbox (bubblewrap, socat, ripgrep). They may skip only where the
// platform cannot sandbox at all and never in CI, where the tools are installed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findExecutable } from '../../src/agent/find-executable.js';
import { git, makeGitRepo } from './core-fixtures.js';

const tools = ['bwrap', 'socat', 'rg'];
const missing = tools.filter((t) => !findExecutable(t));
const platformOk = process.platform === 'linux' || process.platform === 'darwin';

/** Skip only outside CI, when this machine cannot run the sandbox. */
export const skipSandbox = !process.env['CI'] && (!platformOk || (process.platform === 'linux' && missing.length > 0));
if (skipSandbox) {
  process.stderr.write(
    `sandbox tests skipped: this machine cannot run the sandbox (${platformOk ? `missing ${missing.join(', ')}` : process.platform}); CI never skips them\n`,
  );
}

/** A repository with a template `t` made of the given steps (YAML text). */
export function repoWithTemplate(steps: string, files: Record<string, string> = { 'README.md': '# demo\n' }): string {
  const repo = makeGitRepo(files);
  mkdirSync(join(repo, '.atlas', 'templates'), { recursive: true });
  writeFileSync(join(repo, '.atlas', 'templates', 't.yaml'), `name: t\ndescription: sandbox test\nsteps:\n${steps}`);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'template');
  return repo;
}
