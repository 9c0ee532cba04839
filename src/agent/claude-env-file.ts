// Claude Code runs each Bash command in a shell restored from a snapshot of the user's shell,
// which keeps the PATH it was given. When that snapshot cannot be made within its 10 s limit (a
// busy machine, a slow shell profile), it runs the command in a login shell instead, whose profile
// resets PATH: `atlas checkpoint` and the project's tools, found on the PATH atlas gave Claude
// Code, are then "command not found". Claude Code sources $CLAUDE_ENV_FILE before every Bash
// command either way, so the PATH goes there too.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shellQuote } from '../exec/run-process.js';

export interface ClaudeEnvFile {
  env: NodeJS.ProcessEnv;
  /** Removes the file (after Claude Code has ended). */
  remove(): void;
}

/**
 * `env` with CLAUDE_ENV_FILE naming a file that exports its PATH. A CLAUDE_ENV_FILE of the
 * person's own is left as it is (theirs decides), and so is an environment without a PATH.
 */
export function withPathEnvFile(env: NodeJS.ProcessEnv): ClaudeEnvFile {
  const path = env['PATH'];
  if (env['CLAUDE_ENV_FILE'] || !path) return { env, remove: () => undefined };
  // In the host's temp folder: readable inside the sandbox (it holds no secret: a PATH).
  const dir = mkdtempSync(join(tmpdir(), 'atlas-claude-env-'));
  const file = join(dir, 'env.sh');
  writeFileSync(file, `export PATH=${shellQuote(path)}\n`, { mode: 0o644 });
  return {
    env: { ...env, CLAUDE_ENV_FILE: file },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
