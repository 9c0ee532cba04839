// Watching tasks under `atlas ui` (issue 38): the output pane follows the newest line unless the
// person scrolled up, and keeps its task: going from task A to task B by the address shows B's
// output only, while A keeps printing. Cards say the step as `atlas status` does; the filter lives
// in the address (kept over a reload); each view has its title and focus on its heading; the
// signed-out page of `atlas ui` says to restart it, and passes axe.
import { spawn } from 'node:child_process';
import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { ATLAS_BIN, tempDir } from './helpers/core-fixtures.js';
import { repoIn } from './helpers/server-fixtures.js';
import { addTemplate, axeViolations, boardServers, chromiumOfThisFile, screenshot, withChromium } from './helpers/ui-fixtures.js';

const boards = boardServers();

/** A template printing `count` lines "<word> N" every `ms`, then waiting for a person. */
function printer(word: string, count: number, ms: number): string {
  return `name: ${word}\nbranch_prefix: ${word}/\nsteps:\n  - name: print\n    type: command\n    run: node -e "let i=0;const t=setInterval(()=>{console.log('${word} '+(++i));if(i===${count})clearInterval(t)},${ms})"\n  - name: approve\n    type: human\n    prompt: "Done?"\n`;
}

async function outputText(page: Page): Promise<string> {
  return (await page.getByTestId('output').textContent()) ?? '';
}

withChromium('watching tasks on the board', () => {
  const browser = chromiumOfThisFile();

  it("follows the tail unless scrolled up, keeps each task's output to its own page, and keeps filters in the address", async () => {
    const home = tempDir();
    const repo = repoIn(tempDir('atlas-repos-'), 'demo');
    addTemplate(repo, 'alpha', printer('alpha', 600, 40));
    addTemplate(repo, 'beta', printer('beta', 400, 60));
    const board = await boards.startLocal(home);
    const terminals: ReturnType<typeof spawn>[] = [];
    try {
      const origin = new URL(board.link).origin;
      const context = await browser().newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(board.link);
      await page.locator('.live.on').waitFor({ timeout: 15_000 });
      for (const [t, d] of [
        ['alpha', 'task A'],
        ['beta', 'task B'],
      ]) {
        terminals.push(
          spawn(process.execPath, [ATLAS_BIN, 'start', t!, d!, '--no-interactive', '--local'], {
            cwd: repo,
            env: { ...process.env, ATLAS_HOME: home },
            stdio: 'ignore',
          }),
        );
      }
      const cardA = page.locator('[data-column="running"] [data-task]', { hasText: 'task A' });
      const cardB = page.locator('[data-column="running"] [data-task]', { hasText: 'task B' });
      await cardA.waitFor({ timeout: 30_000 });
      await cardB.waitFor({ timeout: 30_000 });
      const a = (await cardA.getAttribute('data-task'))!;
      const b = (await cardB.getAttribute('data-task'))!;
      // Step 1 of 2 says so (it said 2/2).
      await cardA
        .getByTestId('card-step')
        .filter({ hasText: /^step 1\/2 \(print\)/ })
        .waitFor();
      await cardA
        .getByTestId('card-last-line')
        .filter({ hasText: /^alpha \d+$/ })
        .waitFor({ timeout: 30_000 });
      await screenshot(page, 'board-running');

      // The filter goes into the address and survives a reload.
      await page.getByLabel('Filter').fill('beta');
      await page.waitForURL(/#\/\?q=beta$/);
      await page.reload();
      await expect(page.getByLabel('Filter').inputValue()).resolves.toBe('beta');
      await page.locator(`[data-task="${b}"]`).waitFor();
      expect(await page.locator(`[data-task="${a}"]`).count()).toBe(0);
      await page.getByLabel('Filter').fill('');
      await page.waitForURL(/#\/$/);

      // A's page: the pane follows the tail.
      await page.goto(`${origin}/#/tasks/${a}`);
      await page.getByRole('heading', { level: 1, name: 'task A' }).waitFor();
      await expect.poll(() => page.title()).toBe('task A · atlas board');
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('task-title');
      const pane = page.getByTestId('output');
      await pane.filter({ hasText: /alpha 150\b/ }).waitFor({ timeout: 60_000 });
      const atEnd = () => pane.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight <= 24);
      await expect.poll(atEnd).toBe(true);
      // Scrolled up to read: it stays put while lines arrive, until "Follow the newest output".
      await pane.evaluate((el) => ((el.scrollTop = 0), el.dispatchEvent(new Event('scroll'))));
      await page.locator('[data-testid="output"][data-following="no"]').waitFor();
      const lines = (await outputText(page)).split('\n').length;
      await expect.poll(async () => (await outputText(page)).split('\n').length, { timeout: 30_000 }).toBeGreaterThan(lines + 5);
      expect(await pane.evaluate((el) => el.scrollTop)).toBe(0);
      await page.getByRole('button', { name: 'Follow the newest output' }).click();
      await expect.poll(atEnd).toBe(true);
      await expect(axeViolations(page)).resolves.toEqual([]);
      await screenshot(page, 'task-running');

      // To B by the address: B's lines only, while A goes on printing.
      await page.evaluate((id) => (location.hash = `#/tasks/${id}`), b);
      await page.getByRole('heading', { level: 1, name: 'task B' }).waitFor();
      await pane.filter({ hasText: /beta \d+/ }).waitFor({ timeout: 30_000 });
      const seen = (await outputText(page)).split('\n').length;
      await expect.poll(async () => (await outputText(page)).split('\n').length, { timeout: 30_000 }).toBeGreaterThan(seen + 5);
      expect(await outputText(page)).not.toMatch(/alpha/);
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('task-title');

      // Signed out (a new browser, no cookie): the page of `atlas ui` says what to do.
      const stranger = await (await browser().newContext()).newPage();
      await stranger.goto(`${origin}/`);
      await stranger.getByRole('heading', { level: 1, name: 'atlas board: signed out' }).waitFor();
      await expect(stranger.locator('main').textContent()).resolves.toContain('Restart atlas ui for a new link');
      expect(await stranger.getByLabel(/API token/).count()).toBe(0);
      await expect(axeViolations(stranger)).resolves.toEqual([]);
      await screenshot(stranger, 'signed-out');
      await context.close();
    } finally {
      for (const t of terminals) t.kill('SIGTERM');
      await board.server.stop('test over');
    }
  }, 180_000);
});
