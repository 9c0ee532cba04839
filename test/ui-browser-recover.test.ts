// Recovery from the browser (issue 38): tasks cut off by a stopped server are in the crashed
// column; each task's page says what happened, shows the last output, why atlas recommends what
// it does, and every action `atlas recover` offers with what it does. A `manual` recommendation is
// a choice between them: each action is taken from the page (retry_step, skip_step,
// retry_from_checkpoint), each task runs to the end, and the CLI agrees afterwards.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { atlas, tempDir } from './helpers/core-fixtures.js';
import { auth, createToken, readSse, repoIn } from './helpers/server-fixtures.js';
import { agentConfig } from './helpers/server-inprocess-fixtures.js';
import {
  addTemplate,
  axeViolations,
  boardServers,
  chromiumOfThisFile,
  screenshot,
  signInPage,
  withChromium,
} from './helpers/ui-fixtures.js';

const boards = boardServers();

/** A step that changes the tree (not idempotent), prints a coloured line, and waits the first time only. */
function cutTemplate(name: string, root: string): string {
  const marker = join(root, `${name}.ran`);
  return `name: ${name}\nbranch_prefix: ${name}/\nsteps:\n  - name: work\n    type: command\n    max_attempts: 1\n    run: node -e "const f=require('fs'); f.appendFileSync('work.txt', 'x'); console.log('\\\\x1b[33mhalfway through ${name}\\\\x1b[0m'); if (!f.existsSync('${marker}')) { f.writeFileSync('${marker}', '1'); setTimeout(() => {}, 60000) }"\n  - name: after\n    type: command\n    run: node -e "console.log('after ${name}')"\n`;
}

withChromium('recovering from the board', () => {
  const browser = chromiumOfThisFile();

  it('shows the diagnosis and every action; manual is a choice; each action taken from the page finishes its task', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    const repo = repoIn(root, 'cut');
    const names = ['cuta', 'cutb', 'cutc'];
    for (const n of names) addTemplate(repo, n, cutTemplate(n, root));
    const alice = createToken(home, 'alice');
    const config = agentConfig((c) => {
      c.server.repos_root = root;
      c.server.grace_period = 200;
    });
    const first = await boards.start(home, { config });
    const ids: string[] = [];
    for (const n of names) {
      const created = await fetch(`${first.url}/tasks`, {
        method: 'POST',
        headers: auth(alice),
        body: JSON.stringify({ repo: 'cut', template: n, description: `cut ${n}`, mode: 'local' }),
      });
      const id = ((await created.json()) as any).task.id as string;
      await readSse(
        await fetch(`${first.url}/tasks/${id}/events`, { headers: auth(alice) }),
        (e) => e.event === 'output' && String(e.data.text).includes('halfway'),
      );
      ids.push(id);
    }
    await first.server.stop('test: cut the tasks off');

    const { url } = await boards.start(home, { config });
    const page = await (await browser().newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => (dialogs.push(d.message()), void d.accept()));
    await signInPage(page, url, alice);
    for (const id of ids) await page.locator(`[data-column="crashed"] [data-task="${id}"]`).waitFor({ timeout: 30_000 });
    await expect(page.locator(`[data-task="${ids[0]}"] [data-testid="card-step"]`).textContent()).resolves.toMatch(/^step 1\/2 \(work\)/);
    await expect(page.locator(`[data-task="${ids[0]}"] [data-testid="card-last-line"]`).textContent()).resolves.toBe(
      'halfway through cuta',
    );
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'board-crashed');
    // Readable on a phone: nothing wider than 390 px.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 800 });

    const plan: Record<string, string> = { [ids[0]!]: 'retry_step', [ids[1]!]: 'skip_step', [ids[2]!]: 'retry_from_checkpoint' };
    for (const id of ids) {
      await page.goto(`${url}/#/tasks/${id}`);
      const panel = page.getByTestId('recovery');
      await panel.waitFor({ timeout: 30_000 });
      // What happened, the last output (coloured), why: a step that changes the tree, cut off on its last attempt.
      await expect(panel.getByTestId('what-happened').textContent()).resolves.toMatch(/^While running a step/);
      await panel.locator('.ansi-fg-3', { hasText: `halfway through` }).waitFor();
      await expect(panel.getByTestId('recommended').textContent()).resolves.toMatch(/^you choose \(manual\): Step "work" \(command step\)/);
      const options = await panel.locator('[data-option]').evaluateAll((els) => els.map((e) => e.getAttribute('data-option')));
      expect(options).toEqual(['retry_step', 'retry_from_checkpoint', 'skip_step', 'manual']);
      await expect(panel.locator('[data-option="skip_step"] .effect').textContent()).resolves.toContain(
        'record "work" as complete without running it again',
      );
      const chosen = plan[id]!;
      const button = panel.locator(`[data-recover="${chosen}"]`);
      if (id === ids[0]) {
        expect(await axeViolations(page)).toEqual([]);
        await screenshot(page, 'task-recovery');
      }
      await button.click();
      await page.getByTestId('task-state').filter({ hasText: 'completed' }).waitFor({ timeout: 60_000 });
      // The result: no recovery left to choose, and the task's history says what was done.
      expect(await page.getByTestId('recovery').count()).toBe(0);
    }
    expect(dialogs).toHaveLength(3);
    expect(dialogs[0]).toMatch(/^Recover with retry_step\? This will run "work" again/);
    expect(dialogs[2]).toMatch(/^Recover with retry_from_checkpoint\? This will save every uncommitted change/);

    // The CLI agrees: all three completed; the skipped one never ran its step again.
    const status = JSON.parse((await atlas(['--json', 'status', '--all'], { cwd: repo, env: { ATLAS_HOME: home } })).stdout);
    for (const id of ids) expect(status.tasks.find((t: { id: string }) => t.id === id)?.state).toBe('completed');
    const triggers = async (id: string) =>
      ((await (await fetch(`${url}/tasks/${id}`, { headers: auth(alice) })).json()) as any).hook.history.map(
        (e: { trigger: string }) => e.trigger,
      ) as string[];
    expect(await triggers(ids[1]!)).toContain('step_skipped');
    expect(await triggers(ids[0]!)).not.toContain('step_skipped');
    // retry_step ran "work" on the tree as it was (two x's); retry_from_checkpoint reset it first.
    const work = (id: string) => readFileSync(join(status.tasks.find((t: { id: string }) => t.id === id).worktree, 'work.txt'), 'utf8');
    expect(work(ids[0]!)).toBe('xx');
  }, 240_000);
});
