// A task's conversations (its agent runs: messages and tool calls, as text) with its tokens and
// cost, and the usage page per day, per template and per account: through the API (every answer
// checked against the OpenAPI document) and in Chromium.
import { appendFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { usageReport } from '../src/server/api/usage-report.js';
import { messageLines } from '../src/ui/task-conversations.js';
import { usageText } from '../src/ui/usage-format.js';
import { bars } from '../src/ui/usage-view.js';
import { message, partialStats, record, stats, toolCall, writeConversation } from './helpers/conversation-fixtures.js';
import { REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth, createToken, repoIn } from './helpers/server-fixtures.js';
import { agentConfig } from './helpers/server-inprocess-fixtures.js';
import { axeViolations, boardServers, chromiumOfThisFile, signInPage, withChromium } from './helpers/ui-fixtures.js';

const boards = boardServers();
checkResponses();

describe('usage figures', () => {
  it('adds runs up per day, template and account, keeping unknown output and cost as lower bounds', () => {
    const r = usageReport(
      ['alice'],
      [
        {
          account: 'alice',
          day: '2026-11-24',
          template: 'quick',
          stats: stats({ total_input_tokens: 100, total_output_tokens: 20, cost_usd: 0.5 }),
        },
        { account: 'alice', day: '2026-11-25', template: 'quick', stats: partialStats({ total_input_tokens: 10 }) },
        {
          account: 'alice',
          day: '2026-11-25',
          template: '(conversations)',
          stats: stats({ total_input_tokens: 1, total_output_tokens: 2, cost_usd: 0.25 }),
        },
      ],
    );
    expect(r.accounts).toEqual(['alice']);
    expect(r.by_day.map((d) => [d.key, d.input_tokens, d.output_tokens, d.cost_usd, d.cost_complete])).toEqual([
      ['2026-11-24', 100, 20, 0.5, true],
      ['2026-11-25', 11, 2, 0.25, false],
    ]);
    expect(r.by_template.map((d) => [d.key, d.conversations, d.partial])).toEqual([
      ['(conversations)', 1, 0],
      ['quick', 2, 1],
    ]);
    expect(r.by_account).toEqual([{ key: 'alice', ...r.total }]);
    expect(usageText(r.total)).toBe('111 in / ≥22 out tokens · ≥$0.7500 · 3 runs, 1 partial');
    expect(usageText({ ...r.total, output_tokens: null, cost_usd: null })).toBe('111 in / ? out tokens · $? · 3 runs, 1 partial');
  });

  it('scales bars to the largest value and shortens long labels', () => {
    const row = (key: string, input: number) => ({
      key,
      conversations: 1,
      partial: 0,
      input_tokens: input,
      output_tokens: 0,
      output_tokens_complete: true,
      cost_usd: 0,
      cost_complete: true,
    });
    expect(bars([row('a', 50), row('a-very-long-template', 100)], (r) => r.input_tokens, 120, 8)).toEqual([
      { key: 'a', label: 'a', value: 50, h: 60 },
      { key: 'a-very-long-template', label: 'a-very-…', value: 100, h: 120 },
    ]);
    expect(bars([row('a', 0)], (r) => r.input_tokens, 120, 8)[0]!.h).toBe(0);
  });

  it('shows a recorded message as its text and each tool call with its result', () => {
    expect(
      messageLines(
        message('conv-000000000001', {
          role: 2,
          body: 'Writing',
          tool_calls: [toolCall({ output: '</script>ok' }), toolCall({ name: 'Bash', status: 'pending' })],
        }),
      ),
    ).toEqual([
      'agent: Writing',
      'tool Write: {"file_path":"src/a.ts","content":"x"}',
      '→ success: </script>ok',
      'tool Bash: {"file_path":"src/a.ts","content":"x"}',
    ]);
    expect(
      messageLines(
        message('conv-000000000001', { role: 3, body: '', tool_calls: [toolCall({ status: 'error', output: '', error: 'denied' })] }),
      ),
    ).toEqual(['tool Write: {"file_path":"src/a.ts","content":"x"}', '→ error: denied']);
  });
});

withChromium("a task's conversations and usage in Chromium", () => {
  const browser = chromiumOfThisFile();

  it("lists the task's runs with tokens and cost, pages their messages as text, and charts usage; another account gets 404", async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    repoIn(root, 'demo');
    const alice = createToken(home, 'alice');
    const bob = createToken(home, 'bob');
    const { url } = await boards.start(home, { config: agentConfig((c) => (c.server.repos_root = root)) });
    const created = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ repo: 'demo', template: 'quick', description: 'with runs' }),
    });
    expect(created.status).toBe(202);
    const id = ((await created.json()) as any).task.id as string;
    for (let i = 0; i < 600; i++) {
      const d: any = await (await fetch(`${url}/tasks/${id}`, { headers: auth(alice) })).json();
      if (d.task.state === 'awaiting_human' && !d.running) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // Two agent runs recorded in the task's folder: one complete with 260 messages, one cut off.
    const dir = join(home, 'workspaces', readdirSync(join(home, 'workspaces'))[0]!, 'tasks', id);
    const first = record(id, {
      step_name: 'build',
      started_at: '2026-11-24T10:00:00Z',
      stats: stats({ total_input_tokens: 1200, total_output_tokens: 300, cost_usd: 0.25 }),
    });
    const messages = [
      message(first.id, { role: 1, body: 'Fix <img src=x onerror=window.__pwned=3>' }),
      message(first.id, { role: 2, body: 'Writing the fix', tool_calls: [toolCall({ output: '</script>done' })] }),
      ...Array.from({ length: 258 }, (_, i) => message(first.id, { role: 2, body: `step ${i + 1}` })),
    ];
    writeConversation(dir, first, messages);
    const second = record(id, {
      step_name: 'build',
      attempt: 2,
      started_at: '2026-11-25T10:00:00Z',
      ended_at: null,
      status: 'interrupted',
      stats: partialStats({ total_input_tokens: 50 }),
    });
    writeConversation(dir, second);

    const runs: any = await (await fetch(`${url}/tasks/${id}/conversations`, { headers: auth(alice) })).json();
    expect(runs.conversations.map((c: any) => c.id)).toEqual([first.id, second.id]);
    expect(runs.total).toMatchObject({
      conversations: 2,
      partial: 1,
      input_tokens: 1250,
      output_tokens: 300,
      output_tokens_complete: false,
      cost_usd: 0.25,
      cost_complete: false,
    });
    const pageOne: any = await (
      await fetch(`${url}/tasks/${id}/conversations/${first.id}/messages?limit=100`, { headers: auth(alice) })
    ).json();
    expect(pageOne.messages).toHaveLength(100);
    expect(pageOne.messages[1].tool_calls[0].output).toBe('</script>done');
    const pageTwo: any = await (
      await fetch(`${url}/tasks/${id}/conversations/${first.id}/messages?limit=1000&cursor=${pageOne.next_cursor}`, {
        headers: auth(alice),
      })
    ).json();
    expect([pageTwo.messages.length, pageTwo.next_cursor]).toEqual([160, null]);
    expect((await fetch(`${url}/tasks/${id}/conversations/conv-ffffffffffff/messages`, { headers: auth(alice) })).status).toBe(404);
    expect((await fetch(`${url}/tasks/${id}/conversations`, { headers: auth(bob) })).status).toBe(404);
    const usage: any = await (await fetch(`${url}/usage`, { headers: auth(alice) })).json();
    expect(usage.accounts).toEqual(['alice']);
    expect(usage.by_template.map((r: any) => [r.key, r.input_tokens])).toEqual([['quick', 1250]]);
    expect(usage.by_day.map((r: any) => r.key)).toEqual(['2026-11-24', '2026-11-25']);
    expect(usage.by_account.map((r: any) => r.key)).toEqual(['alice']);
    const bobs: any = await (await fetch(`${url}/usage`, { headers: auth(bob) })).json();
    expect([bobs.total.conversations, bobs.by_day]).toEqual([0, []]);

    const page = await (await browser().newContext({ viewport: { width: 1100, height: 800 } })).newPage();
    await signInPage(page, url, alice);
    await page.locator(`[data-task="${id}"] .card-link`).click();
    await page.getByTestId('task-usage').filter({ hasText: '1,250 in / ≥300 out tokens · ≥$0.2500 · 2 runs, 1 partial' }).waitFor();
    await page.getByRole('button', { name: 'Messages' }).first().click();
    const lines = page.getByTestId('run-messages').locator('li');
    await page.getByTestId('run-messages').getByText('you: Fix <img src=x onerror=window.__pwned=3>').waitFor();
    await page.getByTestId('run-messages').getByText('→ success: </script>done').waitFor();
    // 200 messages a page (one of them with a tool call and its result: two more lines).
    expect(await lines.count()).toBe(202);
    if (process.env['ATLAS_UI_SCREENSHOTS'] === '1')
      await page.screenshot({ path: join(REPO_ROOT, 'docs', 'ui', 'task-conversations.png'), fullPage: true });
    await page.getByRole('button', { name: 'Show more messages' }).click();
    await page.getByTestId('run-messages').getByText('agent: step 258', { exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Show more messages' }).count()).toBe(0);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // The cut-off run, open and empty, gets messages while the task goes on: they appear live.
    const read = page.waitForResponse((r) => r.url().includes(`/conversations/${second.id}/messages`));
    await page.getByRole('button', { name: 'Messages', exact: true }).click();
    await read;
    // One run is open at a time: opening this one closes the first.
    const late = page.getByTestId('run-messages');
    expect(await late.locator('li').count()).toBe(0);
    appendFileSync(
      join(dir, 'conversations', second.id, 'messages.jsonl'),
      `${JSON.stringify(message(second.id, { role: 2, body: 'a late message' }))}\n`,
    );
    page.on('dialog', (d) => void d.accept());
    await page.locator('[data-action="approve"]').click();
    await late.getByText('agent: a late message').waitFor({ timeout: 30_000 });

    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByTestId('usage-total').filter({ hasText: '1,250 in / ≥300 out tokens' }).waitFor();
    await expect(page.getByTestId('usage-accounts').textContent()).resolves.toContain('alice alone');
    // Per day (2 days), per template (1) and per account (1): tokens and cost each.
    expect(await page.locator('svg rect.bar').count()).toBe(8);
    expect(await page.getByRole('img', { name: 'Cost per template (USD)' }).count()).toBe(1);
    expect(await axeViolations(page)).toEqual([]);
    if (process.env['ATLAS_UI_SCREENSHOTS'] === '1')
      await page.screenshot({ path: join(REPO_ROOT, 'docs', 'ui', 'usage.png'), fullPage: true });
  }, 120_000);
});
