// The file that carries the agent's PATH into every Bash command of Claude Code: sourced by a real
// shell, it gives back the PATH exactly, whatever it holds.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withPathEnvFile } from '../src/agent/claude-env-file.js';

describe('withPathEnvFile', () => {
  it('names a file that, sourced by a login-reset shell, restores the PATH exactly; remove() deletes it', () => {
    const path = `/opt/it's here:/usr/bin:/bin:/tmp/$(touch pwned) "quoted"`;
    const { env, remove } = withPathEnvFile({ PATH: path, HOME: '/nowhere' });
    const file = env['CLAUDE_ENV_FILE']!;
    expect(env['PATH']).toBe(path);
    expect(env['HOME']).toBe('/nowhere');
    expect(statSync(file).mode & 0o777).toBe(0o644);
    const out = execFileSync('/bin/sh', ['-c', `PATH=/usr/bin:/bin; . "$1"; printf %s "$PATH"`, 'sh', file], { encoding: 'utf8' });
    expect(out).toBe(path);
    expect(existsSync('pwned')).toBe(false);
    expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
    remove();
    expect(existsSync(dirname(file))).toBe(false);
    remove(); // twice: nothing left to remove, no error
  });

  it("leaves the person's own CLAUDE_ENV_FILE, and an environment without a PATH, as they are", () => {
    const own = { PATH: '/usr/bin', CLAUDE_ENV_FILE: '/home/me/claude-env.sh' };
    const kept = withPathEnvFile(own);
    expect(kept.env).toBe(own);
    kept.remove();
    const bare = { HOME: '/nowhere' };
    expect(withPathEnvFile(bare).env).toBe(bare);
  });
});
