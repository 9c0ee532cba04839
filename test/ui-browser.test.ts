// The board in a real browser (Chromium through playwright-core) against a real server started
// here, with real atlas tasks: sign in, a card appears and moves columns live (no reload), a hostile
// task description and output are shown as text and run nothing, approving in the browser lets the
// task finish, and another account cannot reach the task by URL.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { tempDir } from './helpers/core-fixtures.js';
import { auth, createToken, repoIn, TEMPLATE } from './helpers/server-fixtures.js';
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

const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const boards = boardServers();

function hostileRepo(root: string): string {
  const repo = repoIn(root, 'demo');
  const hostile = TEMPLATE.replace('name: quick', 'name: hostile').replace(
    `console.log('hello-from-task')`,
    `console.log('<img src=x onerror=window.__pwned=2></script>\\x1b[31mred')`,
  );
  addTemplate(repo, 'hostile', hostile);
  return repo;
}

withChromium('the board in Chromium', () => {
  const browser = chromiumOfThisFile();

  it('signs in by cookie, shows a new task live, renders hostile text as text, approves it and sees it complete; bob cannot reach it', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    hostileRepo(root);
    const alice = createToken(home, 'alice');
    const bob = createToken(home, 'bob');
    const { url } = await boards.start(home, { config: agentConfig((c) => (c.server.repos_root = root)) });

    const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`);
      void d.accept();
    });
    let navigations = 0;
    page.on('framenavigated', () => navigations++);
    await page.goto(`${url}/`);
    await page.getByRole('heading', { level: 1, name: 'Sign in to the atlas board' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await signInPage(page, url, alice);
    await screenshot(page, 'board-empty');
    // The token is nowhere the page's script can reach.
    expect(
      await page.evaluate(
        () => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + location.href + document.cookie,
      ),
    ).not.toContain(alice);
    expect(await page.evaluate(() => document.cookie)).not.toContain('atlas_session');
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'atlas_session')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    const before = navigations;

    const created = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ repo: 'demo', template: 'hostile', description: HOSTILE }),
    });
    expect(created.status).toBe(202);
    const id = ((await created.json()) as any).task.id as string;
    // The card appears and reaches "waiting for a person" with no reload of the page.
    const card = page.locator(`[data-column="waiting"] [data-task="${id}"]`);
    await card.waitFor({ timeout: 60_000 });
    expect(navigations).toBe(before);
    await expect(card.locator('.card-link').textContent()).resolves.toBe(HOSTILE);
    expect(await page.locator('img').count()).toBe(0);
    await screenshot(page, 'board-waiting');

    await card.locator('.card-link').click();
    await page.locator('[data-action="approve"]').waitFor();
    // The step's output is replayed from the task's log by the page's event stream: wait for it.
    await page.getByTestId('output').filter({ hasText: '<img src=x onerror=window.__pwned=2></script>' }).waitFor();
    // HOOK.md (it quotes the hostile description) is drawn as Markdown of known elements only:
    // the description is text, never parsed as HTML.
    await page.getByTestId('hook-md').filter({ hasText: id }).waitFor();
    await page.getByTestId('hook-md').filter({ hasText: HOSTILE }).waitFor();
    expect(await page.getByTestId('hook-md').locator('img, script, iframe, a, [onerror]').count()).toBe(0);
    await page.locator('[data-action="approve"]').click();
    await page.getByTestId('task-state').filter({ hasText: 'completed' }).waitFor({ timeout: 60_000 });
    expect(dialogs).toEqual(['confirm: Approve the step waiting for a person? The task goes on.']);
    await page.locator('[data-testid="receipts"] li[data-mark="passed"]').first().waitFor();
    expect(await page.locator('[data-testid="receipts"] li:not([data-mark="passed"])').count()).toBe(0);
    // A receipt changed on disk no longer matches its signature: the page says ✗ and why.
    const hookPath = join(home, 'workspaces', readdirSync(join(home, 'workspaces'))[0]!, 'tasks', id, 'hook.json');
    const hook = JSON.parse(readFileSync(hookPath, 'utf8'));
    hook.receipts[0].exit_code = 1;
    writeFileSync(hookPath, JSON.stringify(hook, null, 2));
    await page.reload();
    await page.locator('[data-testid="receipts"] li[data-mark="invalid"]').first().waitFor();
    await expect(page.locator('[data-testid="receipts"] li .error').first().textContent()).resolves.toContain('signature');
    await screenshot(page, 'task-tampered');
    await page.locator('a', { hasText: '← Board' }).click();
    await page.locator(`[data-column="completed"] [data-task="${id}"]`).waitFor({ timeout: 20_000 });
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('img').count()).toBe(0);

    // A second task, approved by a script while the board is open: its card moves from waiting to
    // completed live, without a reload.
    const navigatedBefore = navigations;
    const second = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ repo: 'demo', template: 'quick', description: 'second' }),
    });
    const secondBody = (await second.json()) as any;
    expect(second.status, JSON.stringify(secondBody)).toBe(202);
    const id2 = secondBody.task.id as string;
    await page.locator(`[data-column="waiting"] [data-task="${id2}"]`).waitFor({ timeout: 60_000 });
    expect((await fetch(`${url}/tasks/${id2}/approve`, { method: 'POST', headers: auth(alice), body: '{}' })).status).toBe(202);
    await page.locator(`[data-column="completed"] [data-task="${id2}"]`).waitFor({ timeout: 60_000 });
    expect(navigations).toBe(navigatedBefore);
    // Filtered by template: only the second task's card stays.
    await page.getByLabel('Template').selectOption('quick');
    expect(await page.locator('[data-task]').evaluateAll((cards) => cards.map((c) => c.getAttribute('data-task')))).toEqual([id2]);

    // Another account signs in: the task is neither on its board nor reachable by URL.
    const other = await (await browser().newContext()).newPage();
    await signInPage(other, url, bob);
    expect(await other.locator('[data-task]').count()).toBe(0);
    await other.goto(`${url}/#/tasks/${id}`);
    await other.getByText(`no task ${id}`).waitFor();
    await context.close();
  }, 180_000);
});
