// Crash hygiene: a SIGKILLed sandboxed run leaves read-only stubs in the worktree, bridge sockets
// in the temp folder and an orphaned socat. `atlas cleanup` reports them, `atlas recover` removes
// exactly them (a user's file of the same name stays) and the task then runs to its end.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { findBridgeProcesses } from '../src/exec/sandbox/socat.js';
import { ATLAS_BIN, atlas, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { repoWithTemplate, skipSandbox } from './helpers/sandbox-fixtures.js';

beforeAll(() => ensureBuilt());

async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(skipSandbox)('sandbox litter after SIGKILL', () => {
  it('recover removes exactly the stubs, sockets and socat the killed run left, then finishes the task', async () => {
    const home = tempDir('atlas-home-');
    // The first attempt hangs (and is killed); the retry finds its marker and finishes.
    const repo = repoWithTemplate(
      '  - name: work\n    type: command\n    run: ["if [ -f first-done ]; then echo second > result.txt; else echo 1 > first-done; sleep 60; fi"]\n' +
        // The person's own .mcp.json below is a control path: allowed by name, so the retry finishes (issue 34).
        'control_paths: [".mcp.json"]\n',
    );
    const env = { ...process.env, ATLAS_HOME: home };
    const child = spawn(process.execPath, [ATLAS_BIN, 'start', 't', 'litter', '--no-interactive', '--sandbox', '--workspace', 'lit'], {
      cwd: repo,
      env,
      stdio: 'ignore',
    });
    const tree = join(home, 'workspaces', 'lit', 'worktree');
    const closed = new Promise((r) => child.on('close', r));
    try {
      await until(() => existsSync(join(tree, 'first-done')) && existsSync(join(tree, '.bashrc')), 'the sandboxed step to start');
    } finally {
      child.kill('SIGKILL');
      await closed;
    }

    const tasks = join(home, 'workspaces', 'lit', 'tasks');
    const record = JSON.parse(readFileSync(join(tasks, readdirSync(tasks)[0]!, 'sandbox-litter.json'), 'utf8'));
    expect(record.stubs).toEqual(
      expect.arrayContaining([
        join(tree, '.bashrc'),
        join(tree, '.gitconfig'),
        join(tree, '.mcp.json'),
        join(tree, '.vscode'),
        join(tree, '.claude'),
      ]),
    );
    // What the kill left behind.
    for (const stub of ['.bashrc', '.profile', '.gitconfig', '.mcp.json', '.idea']) expect(existsSync(join(tree, stub))).toBe(true);
    expect(record.sockets.length).toBeGreaterThan(0);
    expect(findBridgeProcesses(record.sockets).length).toBeGreaterThan(0);

    // Meanwhile a person puts real files where two stubs are.
    chmodSync(join(tree, '.profile'), 0o644);
    writeFileSync(join(tree, '.profile'), 'export EDITOR=vi\n');
    rmSync(join(tree, '.mcp.json'));
    writeFileSync(join(tree, '.mcp.json'), '');

    const dry = await atlas(['cleanup', '--dry-run', '--json'], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout).sandbox_litter_removed[0].removed).toContain('sandbox stub(s)');
    expect(existsSync(join(tree, '.bashrc'))).toBe(true);

    const recovered = await atlas(['recover', '--yes', '--action', 'retry_step', '--json'], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(recovered.code).toBe(0);
    const out = JSON.parse(recovered.stdout);
    expect(JSON.stringify(out)).toContain('sandbox_litter');
    for (const stub of ['.bashrc', '.bash_profile', '.gitconfig', '.gitmodules', '.zshrc', '.ripgreprc', '.vscode', '.idea', '.claude']) {
      expect(existsSync(join(tree, stub)), stub).toBe(false);
    }
    expect(readFileSync(join(tree, '.profile'), 'utf8')).toBe('export EDITOR=vi\n');
    expect(existsSync(join(tree, '.mcp.json'))).toBe(true);
    expect(findBridgeProcesses(record.sockets)).toEqual([]);
    for (const socket of record.sockets) expect(existsSync(socket)).toBe(false);
    expect(readFileSync(join(tree, 'result.txt'), 'utf8')).toBe('second\n');
  }, 180_000);
});
