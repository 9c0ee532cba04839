// Private by default (issue 35): under umask 022, whether or not `atlas init` ran, every folder
// atlas makes in ATLAS_HOME is 0700 and every file 0600, after each everyday command. Only the
// contents of a task's worktree (the repository's own checkout) keep the person's modes.
import { existsSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureEvent, runHook } from './helpers/claude-hook-fixtures.js';
import type { AtlasResult, Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, finished, onlyTask, startAtlas, waitFor } from './helpers/engine-fixtures.js';
import { installAgent, npmRepo } from './helpers/everyday-fixtures.js';

let sb: Sandbox | undefined;
let umask: number;
beforeAll(() => {
  ensureBuilt();
  // Children inherit it: every atlas below starts under umask 022.
  umask = process.umask(0o022);
});
afterAll(() => process.umask(umask));
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

/** Paths under `home` with any mode but 0700 (folders) or 0600 (files), worktree contents aside. */
function notPrivate(home: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return;
    const mode = st.mode & 0o777;
    if (mode !== (st.isDirectory() ? 0o700 : 0o600)) found.push(`${relative(home, path) || '.'} ${mode.toString(8)}`);
    const parts = relative(home, path).split(sep);
    if (parts[0] === 'workspaces' && parts[2] === 'worktree') return;
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(home);
  return found;
}

const modeOf = (path: string) => lstatSync(path).mode & 0o777;

function expectPrivate(home: string, after: string, result?: AtlasResult): void {
  if (result) expect(result.code, `${after}: ${result.stdout}${result.stderr}`).toBe(0);
  expect(notPrivate(home), `after ${after}`).toEqual([]);
}

describe('files and folders atlas makes are private under umask 022', () => {
  it('without atlas init: claude-hook on a fresh home, start, checkpoint, a crash, recover, status, hook, receipts, sync', async () => {
    const s = (sb = npmRepo());
    const run = (args: string[]) => atlas(s, args);

    // The Claude Code hook is often the first thing to make the home.
    for (const name of ['session-start-startup', 'user-prompt-submit', 'post-tool-use-write', 'session-end']) {
      const hook = await runHook(fixtureEvent(name, s.repo, { session_id: 'f1e2d3c4-0000-4000-8000-000000000001' }), s.repo, s.env);
      expect(hook.code, hook.stderr).toBe(0);
    }
    expect(existsSync(s.home)).toBe(true);
    expectPrivate(s.home, 'claude-hook');

    const agent = installAgent(s);
    const marker = join(s.base, 'hanging');
    const child = startAtlas(s, ['start', 'bugfix', 'fix the parser', '--local', ...agent], { env: { AGENT_HANG: marker } });
    const done = finished(child);
    await waitFor(() => existsSync(marker), 30_000, 'the agent to start');
    const id = onlyTask(s).id;
    expectPrivate(s.home, 'start', undefined);
    expectPrivate(s.home, 'checkpoint', await run(['checkpoint', 'half way', '--task', id]));
    child.kill('SIGKILL');
    await done;

    expectPrivate(s.home, 'recover', await run(['recover', '--yes', '--task', id, ...agent]));
    expect(onlyTask(s).hook.state).toBe('completed');
    const everyday = [
      ['status'],
      ['hook', 'status', '--task', id],
      ['hook', 'checkpoints', '--task', id],
      ['hook', 'regenerate', '--task', id],
      ['hook', 'export', '--task', id],
      ['verify', id],
      ['usage'],
      ['key', 'show'],
      ['key', 'export'],
      ['config', 'list'],
      ['templates', 'list'],
    ];
    for (const args of everyday) {
      expectPrivate(s.home, args.join(' '), await run(args));
    }
    // What atlas writes for the person, outside its home, gets the modes their umask gives.
    expectPrivate(s.home, 'receipts export', await run(['receipts', 'export', '--task', id, '--out', join(s.base, 'out', 'bundle.json')]));
    expect(modeOf(join(s.base, 'out'))).toBe(0o755);
    expect(modeOf(join(s.base, 'out', 'bundle.json'))).toBe(0o644);
    const { task } = onlyTask(s);
    mkdirSync(join(task.worktree, 'notes'));
    writeFileSync(join(task.worktree, 'notes', 'plan.md'), 'plan\n');
    expectPrivate(s.home, 'sync push', await run(['sync', 'push', '--task', id]));
    const pulled = join(s.base, 'pulled');
    expectPrivate(s.home, 'sync pull', await run(['sync', 'pull', '--dir', pulled, '--workspace', task.workspace_id]));
    expect([modeOf(pulled), modeOf(join(pulled, 'notes')), modeOf(join(pulled, 'notes', 'plan.md'))]).toEqual([0o755, 0o755, 0o644]);
    expectPrivate(s.home, 'cleanup', await run(['cleanup', '--dry-run']));
  });

  it("after atlas init: init, then start check; what the repository's own commands make keeps the person's umask", async () => {
    const s = (sb = npmRepo({ test: `node -e "require('fs').writeFileSync('made-by-test.txt', 'x')"` }));
    expectPrivate(s.home, 'init', await atlas(s, ['init', '--local', '--no-hooks', '--no-interactive']));
    expectPrivate(s.home, 'start check', await atlas(s, ['start', 'check']));
    expect(lstatSync(join(s.repo, 'made-by-test.txt')).mode & 0o777).toBe(0o644);
  });
});
