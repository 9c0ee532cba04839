// A conversation in the browser: a prompt sent from the page streams its turn live (messages, the
// tool call, usage) as text, and the next prompt continues the same conversation.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lineOf, visibleLines } from '../src/ui/conversation-view.js';
import { REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { createToken } from './helpers/server-fixtures.js';
import { axeViolations, boardServers, chromiumOfThisFile, signInPage, withChromium } from './helpers/ui-fixtures.js';

const boards = boardServers();

describe('conversation lines', () => {
  it('turns each event into a line of text, and ignores the rest', () => {
    expect(lineOf('message', { message: { role: 1, body: '<b>x</b>' } })).toEqual({ kind: 'message role-1', text: 'you: <b>x</b>' });
    expect(lineOf('message', {})).toBeUndefined();
    expect(lineOf('message', { message: { role: 7, body: 'x' } })?.text).toBe('message: x');
    expect(lineOf('tool_use', { name: 'Write', input: { file_path: 'a' } })?.text).toBe('tool Write: {"file_path":"a"}');
    expect(lineOf('tool_result', { status: 'success', output: 'ok' })?.text).toBe('→ success: ok');
    expect(lineOf('output', { text: 'plain' })?.text).toBe('plain');
    expect(lineOf('turn_started', { turn: 2 })?.text).toBe('— turn 2 —');
    expect(lineOf('error', { message: 'boom' })?.kind).toBe('error');
    expect(lineOf('cancelled', { turn: 1 })?.text).toBe('turn 1 cancelled');
    expect(lineOf('interrupted', { turn: 1, reason: 'server died' })?.text).toBe('turn 1 cut off: server died');
    expect(lineOf('usage', { turn: 1, usage: { total_input_tokens: 10, total_output_tokens: 2, cost_usd: 0.5 } })?.text).toBe(
      'turn 1: 10 in / 2 out tokens, $0.5000',
    );
    expect(lineOf('usage', { turn: 1 })?.text).toBe('turn 1: 0 in / 0 out tokens, $0.0000');
    expect(lineOf('something_new', {})).toBeUndefined();
  });

  it('draws the newest lines, and earlier ones a page at a time', () => {
    const all = Array.from({ length: 450 }, (_, i) => i);
    expect(visibleLines(all, 200)).toEqual({ from: 250, lines: all.slice(250) });
    expect(visibleLines(all, 600)).toEqual({ from: 0, lines: all });
    expect(visibleLines([], 200)).toEqual({ from: 0, lines: [] });
  });
});

withChromium('a conversation in Chromium', () => {
  const browser = chromiumOfThisFile();

  it('sends a prompt, streams the turn as text, and sends the next one into the same conversation', async () => {
    const home = tempDir();
    const alice = createToken(home, 'alice');
    const { url } = await boards.start(home);
    const page = await (await browser().newContext()).newPage();
    await signInPage(page, url, alice);
    await page.getByRole('link', { name: 'Conversations' }).click();
    await page.getByRole('heading', { level: 1, name: 'Conversations' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('link', { name: 'New conversation' }).click();
    await page.getByLabel('Next prompt').fill('sleep:800 <img src=x onerror=window.__pwned=1>');
    await page.getByRole('button', { name: 'Send' }).click();
    const messages = page.getByTestId('messages');
    // Live: the agent's first message arrives while the turn still runs.
    await messages.getByText('agent: working on: sleep:800 <img src=x onerror=window.__pwned=1>').waitFor({ timeout: 30_000 });
    await messages.getByText(/^turn 1: \d+ in/).waitFor({ timeout: 30_000 });
    await page.getByTestId('conv-status').filter({ hasText: '1 turn(s)' }).waitFor();
    await page.getByLabel('Next prompt').fill('second prompt lines:300');
    await page.getByRole('button', { name: 'Send' }).click();
    await messages.getByText(/^turn 2: \d+ in/).waitFor({ timeout: 30_000 });
    await page.getByTestId('conv-status').filter({ hasText: '2 turn(s)' }).waitFor();
    // Over 300 lines: the newest 200 are drawn, earlier ones on request.
    expect(await messages.locator('li').count()).toBe(200);
    await page.getByRole('button', { name: /^Show earlier lines \(\d+ more\)$/ }).click();
    await messages.getByText('you: sleep:800').waitFor();
    expect(await messages.locator('li').count()).toBeGreaterThan(300);
    expect(await messages.getByText('you: second prompt').count()).toBe(1);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await axeViolations(page)).toEqual([]);
    if (process.env['ATLAS_UI_SCREENSHOTS'] === '1')
      await page.screenshot({ path: join(REPO_ROOT, 'docs', 'ui', 'conversation.png'), fullPage: true });
    // The usage page counts the conversation's two turns under (conversations), per day, template and account.
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByTestId('usage-total').filter({ hasText: '· 2 runs:' }).waitFor();
    expect(await page.locator('svg rect.bar').count()).toBe(6);
    await page.getByRole('img', { name: 'Tokens per template' }).locator('text.axis', { hasText: '(conversations)' }).waitFor();
  }, 120_000);
});
