// `atlas demo`, the README's first command: the whole story (task, SIGKILL, recover, verify, a
// tampered copy refused) in its own folder, leaving ~/.atlas alone.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isPidRunning } from '../src/liveness/process-identity.js';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { ensureBuilt, atlas as run } from './helpers/engine-fixtures.js';

const dirs: string[] = [];
beforeAll(() => ensureBuilt());
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function scratch(): { base: string; env: NodeJS.ProcessEnv; sb: Sandbox } {
  const base = mkdtempSync(join(tmpdir(), 'atlas-demo-test-'));
  dirs.push(base);
  const userHome = join(base, 'user-home');
  mkdirSync(userHome);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: userHome };
  for (const k of Object.keys(env)) if (k.startsWith('ATLAS_') || k.startsWith('GIT_')) delete env[k];
  const sb = { base, home: '', repo: base, bin: '', env, cleanup: () => {} } as Sandbox;
  return { base, env, sb };
}

/** Running (a zombie not yet reaped by a non-reaping init counts as gone), waiting up to 5 s. */
async function stillRunning(pid: number): Promise<boolean> {
  for (let i = 0; i < 50 && isPidRunning(pid); i++) await new Promise((r) => setTimeout(r, 100));
  return isPidRunning(pid);
}

describe('atlas demo', () => {
  it('runs every stage for real in its own folder and ATLAS_HOME, saying what each proves; ~/.atlas is not touched', async () => {
    const { base, sb } = scratch();
    const dir = join(base, 'demo');
    const r = await run(sb, ['demo', '--dir', dir]);
    expect(r.code, r.stderr).toBe(0);
    const exits = [...r.stdout.matchAll(/→ exit (\d+)/g)].map((m) => Number(m[1]));
    expect(exits).toEqual([137, 0, 0, 0, 0, 1]);
    for (const text of [
      '1/6 start a task, then SIGKILL atlas mid-step',
      '2/6 status sees the crash',
      'crashed',
      '3/6 recover',
      '5/6 verify with the public key alone',
      '6/6 a tampered copy fails',
      'signature does not match',
    ]) {
      expect(r.stdout).toContain(text);
    }
    expect(r.stdout).toContain(`ATLAS_HOME=${join(dir, 'atlas-home')} (a fresh one: your ~/.atlas is not touched)`);
    expect(existsSync(join(base, 'user-home', '.atlas'))).toBe(false);
    // The task completed after the crash, with a receipt of the repository's test command.
    const bundle = JSON.parse(readFileSync(join(dir, 'receipts.json'), 'utf8'));
    expect(bundle.tasks[0].receipts.map((x: any) => [x.command, x.exit_code, x.execution_mode])).toEqual([['node test.mjs', 0, 'local']]);
    expect(readFileSync(join(dir, 'sample-repo', 'calc.mjs'), 'utf8')).toContain('a - b'); // the fix lives on the task's branch
    // The agent atlas left running when it was killed was stopped by the recovery.
    expect(await stillRunning(Number(readFileSync(join(dir, 'agent-started'), 'utf8')))).toBe(false);
  });

  it('refuses a folder that is not empty (exit 2)', async () => {
    const { base, sb } = scratch();
    writeFileSync(join(base, 'precious.txt'), 'mine\n');
    const r = await run(sb, ['demo', '--dir', base]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not empty');
    expect(readFileSync(join(base, 'precious.txt'), 'utf8')).toBe('mine\n');
  });
});
