// A task cut off by a stopped server shows on the board as crashed or paused, with the recovery
// atlas recommends; the Recover button on its page (confirmed) runs it to the end.
import { expect, it } from 'vitest';
import { join } from 'node:path';
import { REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { addSlowTemplate, auth, createToken, readSse, repoIn } from './helpers/server-fixtures.js';
import { agentConfig } from './helpers/server-inprocess-fixtures.js';
import { boardServers, chromiumOfThisFile, signInPage, withChromium } from './helpers/ui-fixtures.js';

const boards = boardServers();

withChromium('recovering from the board', () => {
  const browser = chromiumOfThisFile();

  it('a cut-off task is in the crashed column with its recommended recovery, and Recover finishes it', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    const repo = repoIn(root, 'slow');
    addSlowTemplate(repo, root);
    const alice = createToken(home, 'alice');
    const config = agentConfig((c) => {
      c.server.repos_root = root;
      c.server.grace_period = 200;
    });
    const first = await boards.start(home, { config });
    const created = await fetch(`${first.url}/tasks`, { method: 'POST', headers: auth(alice), body: JSON.stringify({ repo: 'slow', template: 'slow', description: 'slow one' }) });
    const id = ((await created.json()) as any).task.id as string;
    await readSse(await fetch(`${first.url}/tasks/${id}/events`, { headers: auth(alice) }), (e) => e.event === 'state' && e.data.to === 'step_running');
    await first.server.stop('test: cut the task off');

    const { url } = await boards.start(home, { config });
    const page = await (await browser().newContext()).newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    await signInPage(page, url, alice);
    const card = page.locator(`[data-column="crashed"] [data-task="${id}"]`);
    await card.waitFor({ timeout: 30_000 });
    await expect(card.locator('.advice').textContent()).resolves.toMatch(/^Recommended: /);
    if (process.env['ATLAS_UI_SCREENSHOTS'] === '1') await page.screenshot({ path: join(REPO_ROOT, 'docs', 'ui', 'board-crashed.png'), fullPage: true });
    // Readable on a phone: nothing wider than 375 px.
    await page.setViewportSize({ width: 375, height: 700 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await card.locator('.card-link').click();
    await page.locator('[data-action="recover"]').click();
    await page.getByTestId('task-state').filter({ hasText: 'completed' }).waitFor({ timeout: 60_000 });
    expect(dialogs).toEqual(['Recover this task with the recommended action?']);
  }, 180_000);
});
