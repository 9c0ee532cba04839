// `atlas ui` live for tasks a terminal runs: with the board open, `atlas start` in a terminal (a
// child process of the test) makes a card appear and move columns without a reload, the task's
// page streams the running step's output as it comes, and the terminal's approval completes it.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: the bench's plain .mjs helpers, without types
import { makeRepo, writeFixtureTask } from '../bench/lib.mjs';
import { outputAdded, outputLines } from '../src/domain/output-delta.js';
import { ATLAS_BIN, atlas, REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { repoIn } from './helpers/server-fixtures.js';
import { addTemplate, boardServers, chromiumOfThisFile, withChromium } from './helpers/ui-fixtures.js';

const boards = boardServers();

describe('the output a step adds between two readings of its tail', () => {
  it('finds what was appended, also when the tail was cut at its start, and tells a replaced output', () => {
    expect(outputAdded('', 'a\nb')).toEqual({ added: 'a\nb', replaced: false });
    expect(outputAdded('a\nb', 'a\nb\nc')).toEqual({ added: '\nc', replaced: false });
    expect(outputAdded('abcdef', 'defgh')).toEqual({ added: 'gh', replaced: false });
    expect(outputAdded('same', 'same')).toEqual({ added: '', replaced: false });
    expect(outputAdded('first message', 'second message')).toEqual({ added: 'second message', replaced: true });
  });

  it('gives whole lines and keeps the unfinished one', () => {
    expect(outputLines('', 'one\ntwo\nthr')).toEqual({ lines: ['one', 'two'], pending: 'thr' });
    expect(outputLines('thr', 'ee\r\n\nfour')).toEqual({ lines: ['three'], pending: 'four' });
  });
});

/** A repository whose template prints a line every 400 ms for a few seconds, then waits for a person. */
function tickerRepo(): string {
  const repo = repoIn(tempDir('atlas-repos-'), 'demo');
  addTemplate(
    repo,
    'ticker',
    `name: ticker\nbranch_prefix: ticker/\nsteps:\n  - name: tick\n    type: command\n    run: node -e "let i=0;const t=setInterval(()=>{console.log('tick '+(++i));if(i===15)clearInterval(t)},400)"\n  - name: approve\n    type: human\n    prompt: "Ship it?"\n  - name: finish\n    type: command\n    run: node -e "console.log('shipped')"\n`,
  );
  return repo;
}

withChromium('atlas ui follows the tasks of a terminal', () => {
  const browser = chromiumOfThisFile();

  it('a task started in a terminal after the board opened: its card appears and moves live, its page streams the output', async () => {
    const home = tempDir();
    const repo = tickerRepo();
    const board = await boards.startLocal(home);
    try {
      const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
      const page = await context.newPage();
      let navigations = 0;
      page.on('framenavigated', () => navigations++);
      await page.goto(board.link);
      await page.locator('.live.on').waitFor({ timeout: 15_000 });
      const before = navigations;

      // The terminal: an ordinary `atlas start`, not through the board.
      const terminal = spawn(process.execPath, [ATLAS_BIN, 'start', 'ticker', 'from a terminal', '--no-interactive'], {
        cwd: repo,
        env: { ...process.env, ATLAS_HOME: home },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const ended = new Promise<number | null>((resolve) => terminal.once('exit', resolve));
      const running = page.locator('[data-column="running"] [data-task]', { hasText: 'from a terminal' });
      await running.waitFor({ timeout: 30_000 });
      const id = (await running.getAttribute('data-task'))!;

      // Its page, opened while the step runs: the output arrives line by line.
      const taskPage = await context.newPage();
      await taskPage.goto(`${new URL(board.link).origin}/#/tasks/${id}`);
      const output = taskPage.getByTestId('output');
      await output.filter({ hasText: /tick \d/ }).waitFor({ timeout: 30_000 });
      const early = (await output.textContent()) ?? '';
      expect(early).not.toContain('tick 15');
      await output.filter({ hasText: 'tick 15' }).waitFor({ timeout: 30_000 });
      const lines = ((await output.textContent()) ?? '').split('\n').filter((l) => l.startsWith('tick'));
      // Each line once, in order.
      expect(lines).toEqual(Array.from({ length: 15 }, (_, i) => `tick ${i + 1}`));
      if (process.env['ATLAS_UI_SCREENSHOTS'] === '1')
        await taskPage.screenshot({ path: join(REPO_ROOT, 'docs', 'ui', 'task-terminal.png'), fullPage: true });

      // The card moves to "waiting for a person" and, approved in the terminal, to "completed".
      // Exit 5: it waits for a person (--no-interactive).
      expect(await ended).toBe(5);
      await page.locator(`[data-column="waiting"] [data-task="${id}"]`).waitFor({ timeout: 30_000 });
      await taskPage.getByTestId('task-state').filter({ hasText: 'awaiting_human' }).waitFor({ timeout: 30_000 });
      const approved = await atlas(['resume', '--task', id, '--approve', '--no-interactive'], { cwd: repo, env: { ATLAS_HOME: home } });
      expect(approved.code, approved.stderr).toBe(0);
      await page.locator(`[data-column="completed"] [data-task="${id}"]`).waitFor({ timeout: 30_000 });
      await taskPage.getByTestId('task-state').filter({ hasText: 'completed' }).waitFor({ timeout: 30_000 });
      await output.filter({ hasText: 'shipped' }).waitFor({ timeout: 30_000 });
      expect(navigations).toBe(before);

      // A second terminal task, approved in the browser: the server runs that command and logs it;
      // the watcher does not log its changes a second time.
      const quick = await atlas(['start', 'quick', 'approved in the browser', '--no-interactive'], {
        cwd: repo,
        env: { ATLAS_HOME: home },
      });
      expect(quick.code, quick.stderr).toBe(5);
      const waiting = page.locator('[data-column="waiting"] [data-task]', { hasText: 'approved in the browser' });
      await waiting.waitFor({ timeout: 30_000 });
      const id2 = (await waiting.getAttribute('data-task'))!;
      taskPage.on('dialog', (d) => void d.accept());
      await taskPage.goto(`${new URL(board.link).origin}/#/tasks/${id2}`);
      await taskPage.locator('[data-action="approve"]').click();
      await page.locator(`[data-column="completed"] [data-task="${id2}"]`).waitFor({ timeout: 30_000 });
      const workspace = readdirSync(join(home, 'workspaces')).find((w) => existsSync(join(home, 'workspaces', w, 'tasks', id2)))!;
      // The task's log through the API, as a script would read it (a JSON page, with the session's cookie).
      const log = (await taskPage.evaluate(
        async (id) => (await (await fetch(`/tasks/${id}/events?limit=1000`, { headers: { accept: 'application/json' } })).json()).events,
        id2,
      )) as { type: string; data: Record<string, unknown> }[];
      const states = log
        .filter((e) => e.type === 'state')
        .map((e) => `${e.data.at_hook} ${e.data.step} ${e.data.from}>${e.data.to} ${e.data.trigger}`);
      // Each entry of the hook's history once.
      const hook = JSON.parse(readFileSync(join(home, 'workspaces', workspace, 'tasks', id2, 'hook.json'), 'utf8'));
      expect(states).toHaveLength(hook.history.length);
      expect(new Set(states).size).toBe(states.length);
      expect(states.at(-1)).toMatch(/step_pending>completed all_steps_complete$/);
      expect(log.filter((e) => e.type === 'finished').map((e) => e.data.command)).toEqual(['terminal', 'approve']);
      expect(navigations).toBe(before);
      await context.close();
    } finally {
      await board.server.stop('test over');
    }
  }, 180_000);

  it('a column of 230 cards draws 200 and the rest on request', async () => {
    const home = tempDir();
    const repo = (makeRepo as () => string)();
    // Left "step_running" by processes that are gone: all in "Crashed or paused".
    for (let i = 0; i < 230; i++)
      (writeFixtureTask as (h: string, r: string, o: object) => void)(home, repo, {
        id: `task-20260101-120000-${i + 1}`,
        workspace: `ws${i % 5}`,
      });
    const board = await boards.startLocal(home);
    try {
      const page = await (await browser().newContext()).newPage();
      await page.goto(board.link);
      const column = page.locator('section.column[data-column="crashed"]');
      await column.locator('.count', { hasText: '230' }).waitFor({ timeout: 30_000 });
      expect(await column.locator('[data-task]').count()).toBe(200);
      await column.getByRole('button', { name: 'Show 30 more of Crashed or paused' }).click();
      await expect.poll(() => column.locator('[data-task]').count()).toBe(230);
      expect(await column.getByRole('button').count()).toBe(0);
    } finally {
      await board.server.stop('test over');
    }
  }, 120_000);
});
