// The board's flows in Chromium (issue 38), each checked by the CLI afterwards: start a task from
// the board, watch its coloured output beside its conversation, retry a failed agent step with a
// note that reaches the agent's next prompt, review the diff per file and HOOK.md as Markdown,
// approve with the prompt shown, reject with a note, read why a task failed and its proof marks.
// axe-core finds nothing on any view, light or dark; the screenshots of docs/ui.md come from here.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { atlas, REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { auth, createToken, repoIn } from './helpers/server-fixtures.js';
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
const NOTE_AGENT = join(REPO_ROOT, 'test', 'fixtures', 'ui', 'note-agent.mjs');

const REVIEW = `name: review
branch_prefix: review/
steps:
  - name: code
    type: ai
    prompt: "Add the notes file"
    max_attempts: 1
    on_failure: ask
  - name: test
    type: validation
    commands: ['node -e "console.log(1)"']
  - name: approve
    type: human
    prompt: "Merge the agent's notes into main?"
`;

const BROKEN = `name: broken
branch_prefix: broken/
steps:
  - name: test
    type: validation
    commands: ["node -e \\"console.log('boom-output'); process.exit(3)\\""]
`;

/** A home whose agent is note-agent.mjs, a repository with the templates, a token and a board. */
async function setUp() {
  const home = tempDir();
  const root = tempDir('atlas-repos-');
  const repo = repoIn(root, 'demo');
  addTemplate(repo, 'review', REVIEW);
  addTemplate(repo, 'broken', BROKEN);
  writeFileSync(
    join(home, 'config.yaml'),
    `ai:\n  agent: command\n  command: ${process.execPath} ${NOTE_AGENT}\nexecution:\n  mode: local\n`,
  );
  const alice = createToken(home, 'alice');
  const board = await boards.start(home, { config: agentConfig((c) => ((c.server.repos_root = root), (c.execution.mode = 'local'))) });
  return { home, root, repo, alice, url: board.url };
}

async function noViolations(page: Page, view: string): Promise<void> {
  expect(await axeViolations(page), view).toEqual([]);
}

async function heading(page: Page): Promise<string> {
  return page.evaluate(() => `${document.activeElement?.tagName}:${document.activeElement?.textContent}`);
}

withChromium("the board's flows in Chromium", () => {
  const browser = chromiumOfThisFile();

  it('starts a task from the board, shows coloured output, retries with a note the agent reads, reviews the diff and HOOK.md, approves with the prompt shown', async () => {
    const { home, repo, alice, url } = await setUp();
    const page = await (await browser().newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => (dialogs.push(d.message()), void d.accept()));
    await signInPage(page, url, alice);
    await expect.poll(() => page.title()).toBe('Tasks · atlas board');
    await noViolations(page, 'board, empty');

    await page.getByRole('link', { name: 'New task' }).first().click();
    await page.getByRole('heading', { level: 1, name: 'New task' }).waitFor();
    await expect.poll(() => page.title()).toBe('New task · atlas board');
    await expect.poll(() => heading(page)).toBe('H1:New task');
    await page.getByLabel('Template').locator('option', { hasText: 'review' }).waitFor({ state: 'attached' });
    await page.getByLabel('Repository').selectOption('demo');
    await page.getByLabel('Template').selectOption('review');
    await page.getByLabel('What to do').fill('add the notes');
    await page.getByLabel(/On this machine/).check();
    await noViolations(page, 'new task');
    await screenshot(page, 'new-task');
    await page.getByRole('button', { name: 'Start the task' }).click();
    await page.waitForURL(/#\/tasks\/task-/);
    const id = decodeURIComponent(page.url().split('#/tasks/')[1]!);

    // The agent's coloured lines arrive as coloured spans, with no escape left in the text.
    const output = page.getByTestId('output');
    await output.locator('.ansi-fg-2', { hasText: 'green: agent at work' }).waitFor({ timeout: 60_000 });
    await output.locator('.ansi-fg-1.ansi-bold', { hasText: 'bold red' }).waitFor();
    expect(await output.textContent()).not.toContain('\x1b');
    // The failed agent step waits for a person: retry it with a note.
    await page.locator('[data-action="retry"]').waitFor({ timeout: 60_000 });
    await screenshot(page, 'task-step-failed');
    await noViolations(page, 'task, step failed');
    await page.getByLabel(/Note for the agent/).fill('NOTE-FROM-THE-BOARD: keep it short');
    await page.locator('[data-action="retry"]').click();

    // The approval shows what is approved; the diff has the agent's file with the note in it.
    const approval = page.getByTestId('approval');
    await approval.filter({ hasText: "Merge the agent's notes into main?" }).waitFor({ timeout: 60_000 });
    // Beside the output, the agent's newest run is open: its prompt carries the note.
    await page
      .getByTestId('run-messages')
      .getByText(/NOTE-FROM-THE-BOARD: keep it short/)
      .first()
      .waitFor({ timeout: 30_000 });
    const file = page.locator('[data-testid="diff"] details[data-file="README.md"]');
    await file.waitFor({ timeout: 30_000 });
    await expect(file.locator('.dl-add', { hasText: 'NOTE-FROM-THE-BOARD: keep it short' }).count()).resolves.toBeGreaterThan(0);
    const count = await page.locator('.diff-files li', { hasText: 'README.md' }).locator('.diff-add-count').textContent();
    expect(Number(count!.replace('+', ''))).toBeGreaterThan(2);
    await file.locator('summary').click();
    await expect(file.evaluate((d) => (d as HTMLDetailsElement).open)).resolves.toBe(false);
    await file.locator('summary').click();
    // HOOK.md as Markdown: headings and tables, and only known elements.
    const md = page.getByTestId('hook-md');
    await md.locator('table').first().waitFor();
    const tags = await md.locator('*').evaluateAll((els) => [...new Set(els.map((e) => e.tagName.toLowerCase()))]);
    expect(
      tags.filter(
        (t) =>
          ![
            'h3',
            'h4',
            'h5',
            'h6',
            'p',
            'ul',
            'ol',
            'li',
            'pre',
            'code',
            'strong',
            'em',
            'blockquote',
            'hr',
            'div',
            'table',
            'thead',
            'tbody',
            'tr',
            'th',
            'td',
          ].includes(t),
      ),
    ).toEqual([]);
    await noViolations(page, 'task, waiting for approval');
    await screenshot(page, 'task-waiting');

    await page.getByLabel(/Note for the agent/).fill('looks right');
    await page.locator('[data-action="approve"]').click();
    await page.getByTestId('task-state').filter({ hasText: 'completed' }).waitFor({ timeout: 60_000 });
    await page.locator('[data-receipt][data-mark="passed"]').first().waitFor({ timeout: 30_000 });
    await page.getByTestId('strict').filter({ hasText: 'Strict policy met' }).waitFor();
    await noViolations(page, 'task, completed');
    // Readable on a phone: the page, its diff and HOOK.md fit 390 px.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 800 });
    await screenshot(page, 'task-completed');
    expect(dialogs).toEqual([
      "Run the failed step again? Your note goes to the agent's next attempt.",
      'Approve the step waiting for a person? The task goes on.',
    ]);

    // The CLI agrees: completed, the note in the agent's second prompt, the receipts verify.
    const status = await atlas(['--json', 'status', '--all'], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(JSON.parse(status.stdout).tasks.find((t: { id: string }) => t.id === id)?.state).toBe('completed');
    const verify = await atlas(['verify', id], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(verify.stdout, verify.stderr).toMatch(/^OK: /m);
  }, 240_000);

  it('rejects with a note; a failed task says why, links its output, and its receipt is "valid signature, command failed"', async () => {
    const { home, repo, alice, url } = await setUp();
    const quick = (await (
      await fetch(`${url}/tasks`, {
        method: 'POST',
        headers: auth(alice),
        body: JSON.stringify({ repo: 'demo', template: 'quick', description: 'to reject', mode: 'local' }),
      })
    ).json()) as any;
    const broken = (await (
      await fetch(`${url}/tasks`, {
        method: 'POST',
        headers: auth(alice),
        body: JSON.stringify({ repo: 'demo', template: 'broken', description: 'broken tests', mode: 'local' }),
      })
    ).json()) as any;
    const page = await (await browser().newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.on('dialog', (d) => void d.accept());
    await signInPage(page, url, alice);

    await page.goto(`${url}/#/tasks/${quick.task.id}`);
    await page.getByTestId('approval').filter({ hasText: 'Ship it?' }).waitFor({ timeout: 60_000 });
    await page.getByLabel(/Note for the agent/).fill('not this way: REJECT-NOTE');
    await page.locator('[data-action="reject"]').click();
    await page.getByTestId('failure-error').filter({ hasText: 'rejected: not this way: REJECT-NOTE' }).waitFor({ timeout: 60_000 });

    await page.goto(`${url}/#/tasks/${broken.task.id}`);
    await page.getByTestId('failure').waitFor({ timeout: 60_000 });
    await page.locator('[data-receipt][data-mark="failed"]').first().waitFor({ timeout: 30_000 });
    const receipt = page.locator('[data-receipt][data-mark="failed"]').first();
    await expect(receipt.textContent()).resolves.toMatch(/signature ✓ valid.*exit 3 \(failed\)/);
    await page.getByTestId('strict').filter({ hasText: 'Strict policy not met' }).waitFor();
    const link = page.locator('[data-testid="failure"] a.artifact').first();
    const href = (await link.getAttribute('href'))!;
    const artifact = await page.request.get(`${url}${href}`);
    expect(artifact.headers()['content-type']).toContain('text/plain');
    expect(await artifact.text()).toContain('boom-output');
    await noViolations(page, 'task, failed');
    await screenshot(page, 'task-failed');

    // The CLI says the same: the rejection note in the history, and the receipt's two facts apart.
    const status = JSON.parse((await atlas(['--json', 'status', '--all'], { cwd: repo, env: { ATLAS_HOME: home } })).stdout);
    expect(status.tasks.find((t: { id: string }) => t.id === quick.task.id)?.state).toBe('failed');
    const verify = await atlas(['verify', broken.task.id], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(verify.stdout).toContain('valid signature, command failed');
    expect(verify.stdout).toMatch(/^SIGNATURES VALID, COMMANDS FAILED/m);
  }, 240_000);
});
