// Execution modes end to end with the built CLI: fail fast without the sandbox's tools, --local /
// --sandbox / ATLAS_EXECUTION_MODE, `atlas doctor`, receipts of the same shape in both modes (and
// none forgeable from inside the sandbox), and two tasks that cannot reach each other's worktrees.
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { findExecutable } from '../src/agent/find-executable.js';
import { atlas, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { repoWithTemplate, skipSandbox } from './helpers/sandbox-fixtures.js';

function taskDirs(home: string): string[] {
  const ws = join(home, 'workspaces');
  if (!existsSync(ws)) return [];
  return readdirSync(ws).flatMap((w) =>
    existsSync(join(ws, w, 'tasks')) ? readdirSync(join(ws, w, 'tasks')).map((t) => join(ws, w, 'tasks', t)) : [],
  );
}

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

beforeAll(() => ensureBuilt());

describe('sandbox mode fails fast', () => {
  it('names what is missing and how to install it, and runs nothing', async () => {
    const home = tempDir('atlas-home-');
    const repo = repoWithTemplate('  - name: work\n    type: command\n    run: ["echo > ran.txt"]\n');
    // A PATH with git but without bwrap, socat and rg.
    const bin = tempDir('atlas-bin-');
    symlinkSync(findExecutable('git')!, join(bin, 'git'));
    const result = await atlas(['start', 't', 'x', '--no-interactive', '--sandbox'], { cwd: repo, env: { ATLAS_HOME: home, PATH: bin } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('execution.mode is sandbox, but this machine cannot run the sandbox');
    if (process.platform === 'linux') {
      expect(result.stderr).toContain('bwrap (bubblewrap) is not installed');
      expect(result.stderr).toContain('socat (socat) is not installed');
      expect(result.stderr).toContain('rg (ripgrep) is not installed');
      expect(result.stderr).toContain('sudo apt-get install bubblewrap socat ripgrep');
    }
    expect(result.stderr).toContain('nothing was run');
    expect(existsSync(join(repo, 'ran.txt'))).toBe(false);
    expect(taskDirs(home)).toEqual([]);
    // --local needs none of it.
    const local = await atlas(['start', 't', 'x', '--no-interactive', '--local', '-c', 'execution.mode=sandbox'], {
      cwd: repo,
      env: { ATLAS_HOME: home, PATH: bin, ATLAS_EXECUTION_MODE: 'sandbox' },
    });
    expect(local.stderr).not.toContain('cannot run the sandbox');
    expect(local.code).toBe(0);
    expect(json(join(taskDirs(home)[0]!, 'execution.json')).mode).toBe('local');
  });

  it('--sandbox and --local cannot be given together', async () => {
    const result = await atlas(['start', 't', 'x', '--sandbox', '--local'], { cwd: tempDir(), env: { ATLAS_HOME: tempDir() } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/cannot be used with/);
  });
});

describe.skipIf(skipSandbox)('sandbox mode', { timeout: 120_000 }, () => {
  it('doctor reports readiness, a trial run and the effective policy', async () => {
    const home = tempDir('atlas-home-');
    const repo = repoWithTemplate('  - name: work\n    type: command\n    run: ["true"]\n');
    const result = await atlas(
      ['doctor', '--json', '-c', 'execution.mode=sandbox', '-c', 'execution.sandbox.allowed_domains=["example.org"]'],
      { cwd: repo, env: { ATLAS_HOME: home } },
    );
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.mode).toBe('sandbox');
    expect(report.ok).toBe(true);
    expect(report.sandbox.trial.ok).toBe(true);
    expect(report.policy.deny_read).toContain(join(home, 'keys'));
    expect(report.policy.allowed_domains).toContain('example.org');
    expect(report.policy.allow_write).toContain(repo);
    const text = await atlas(['doctor'], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(text.stdout).toContain('execution mode   local');
    expect(text.stdout).toContain('unreadable:');
  });

  it('keeps receipts the same shape in both modes, and a sandboxed step can neither read the key nor forge a receipt', async () => {
    const home = tempDir('atlas-home-');
    const steps = [
      '  - name: forge',
      '    type: command',
      '    run:',
      // Reads the key and appends a fake receipt to its own hook.json: both must fail in the sandbox.
      '      - "cat $ATLAS_HOME/keys/master.key > stolen.txt 2>/dev/null; for h in $ATLAS_HOME/workspaces/sandboxed-run/tasks/*/hook.json; do echo tampered >> $h; done 2>/dev/null; true"',
      '  - name: check',
      '    type: validation',
      '    commands: ["echo checked", "test -f README.md"]',
      '',
    ].join('\n');
    const repo = repoWithTemplate(steps);
    const env = { ATLAS_HOME: home };
    const local = await atlas(['start', 't', 'local run', '--no-interactive', '--local'], { cwd: repo, env });
    expect(local.code).toBe(0);
    const sandboxed = await atlas(['start', 't', 'sandboxed run', '--no-interactive', '--sandbox'], { cwd: repo, env });
    expect(sandboxed.stdout + sandboxed.stderr).toContain('completed');
    expect(sandboxed.code).toBe(0);
    const [localDir, sandboxDir] = taskDirs(home).sort((a, b) =>
      json(join(a, 'task.json')).description.localeCompare(json(join(b, 'task.json')).description),
    );
    const localHook = json(join(localDir!, 'hook.json'));
    const sandboxHook = json(join(sandboxDir!, 'hook.json'));
    const shape = (r: Record<string, unknown>) => Object.keys(r).sort();
    expect(sandboxHook.receipts.length).toBe(2);
    expect(sandboxHook.receipts.map(shape)).toEqual(localHook.receipts.map(shape));
    expect(sandboxHook.receipts.map((r: { exit_code: number }) => r.exit_code)).toEqual([0, 0]);
    expect(sandboxHook.receipts[0].stdout_hash).toBe(localHook.receipts[0].stdout_hash);
    // The mode is signed (message version 3): sandbox here, local there; all else alike.
    expect(sandboxHook.receipts.map((r: { execution_mode: string }) => r.execution_mode)).toEqual(['sandbox', 'sandbox']);
    expect(localHook.receipts.map((r: { execution_mode: string }) => r.execution_mode)).toEqual(['local', 'local']);
    expect(sandboxHook.receipts.map((r: { message_version: number }) => r.message_version)).toEqual([4, 4]);
    expect(sandboxHook.receipts.map((r: { executable: string }) => r.executable)).toEqual(
      localHook.receipts.map((r: { executable: string }) => r.executable),
    );
    expect(json(join(sandboxDir!, 'execution.json')).mode).toBe('sandbox');
    expect(json(join(sandboxDir!, 'execution.json')).policy.deny_read).toContain(join(home, 'keys'));
    // The key stayed out of reach and hook.json untouched; every receipt verifies.
    const key = readFileSync(join(home, 'keys', 'master.key'), 'utf8');
    const sandboxTree = json(join(sandboxDir!, 'task.json')).worktree;
    expect(readFileSync(join(sandboxTree, 'stolen.txt'), 'utf8')).toBe('');
    expect(readFileSync(join(sandboxDir!, 'hook.json'), 'utf8')).not.toContain('tampered');
    const verify = await atlas(['verify', join(sandboxDir!, 'hook.json'), '--require-pass', '--require-sandbox'], { cwd: repo, env });
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    const localVerify = await atlas(['verify', join(localDir!, 'hook.json'), '--require-sandbox', '--json'], { cwd: repo, env });
    expect(localVerify.code).toBe(1);
    expect(localVerify.stdout).toContain('not made in the sandbox');
    // Editing the mode of a local receipt breaks its signature.
    const forged = json(join(localDir!, 'hook.json'));
    for (const r of forged.receipts) r.execution_mode = 'sandbox';
    const forgedPath = join(tempDir('atlas-forged-'), 'hook.json');
    writeFileSync(forgedPath, JSON.stringify(forged));
    const forgedVerify = await atlas(['verify', forgedPath, '--require-sandbox'], { cwd: repo, env });
    expect(forgedVerify.code).toBe(1);
    // In local mode the same command could read the key: the reason for sandbox mode.
    const localTree = json(join(localDir!, 'task.json')).worktree;
    expect(readFileSync(join(localTree, 'stolen.txt'), 'utf8')).toBe(key);
  });

  it("two tasks running at once cannot read or write each other's worktrees", async () => {
    const home = tempDir('atlas-home-');
    const env = { ATLAS_HOME: home };
    // A writes its secret and waits; B, started meanwhile, tries to read and write A's tree.
    const repoA = repoWithTemplate(
      '  - name: work\n    type: command\n    run: ["echo secret-of-a > secret.txt; pwd > ../a-path 2>/dev/null; sleep 3; cat b-was-here.txt 2>/dev/null; true"]\n',
    );
    const a = atlas(['start', 't', 'task a', '--no-interactive', '--sandbox', '--workspace', 'ws-a'], { cwd: repoA, env });
    const treeA = join(home, 'workspaces', 'ws-a', 'worktree');
    // Protection only (A's sandbox may take long to start on a loaded machine); the test's own limit is 120 s.
    const deadline = Date.now() + 60_000;
    while (!existsSync(join(treeA, 'secret.txt')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(join(treeA, 'secret.txt'))).toBe(true);
    const repoB = repoWithTemplate(
      `  - name: work\n    type: command\n    run: ["cat ${treeA}/secret.txt > got.txt 2>&1; echo b > ${treeA}/b-was-here.txt 2>>got.txt; ls ${treeA} >> got.txt 2>&1; true"]\n`,
    );
    const b = await atlas(['start', 't', 'task b', '--no-interactive', '--sandbox', '--workspace', 'ws-b'], { cwd: repoB, env });
    expect(b.code).toBe(0);
    const got = readFileSync(join(home, 'workspaces', 'ws-b', 'worktree', 'got.txt'), 'utf8');
    expect(got).not.toContain('secret-of-a');
    expect(existsSync(join(treeA, 'b-was-here.txt'))).toBe(false);
    expect((await a).code).toBe(0);
  });
});

describe('execution.mode from the environment', () => {
  it('ATLAS_EXECUTION_MODE picks the mode; config list shows the sandbox keys', async () => {
    const home = tempDir('atlas-home-');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'config.yaml'), 'execution:\n  sandbox:\n    allowed_domains: [pypi.org]\n');
    const result = await atlas(['config', 'list', '--json'], {
      cwd: tempDir(),
      env: { ATLAS_HOME: home, ATLAS_EXECUTION_MODE: 'sandbox' },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('"execution.mode"');
    expect(result.stdout).toContain('sandbox');
    expect(result.stdout).toContain('pypi.org');
  });
});
