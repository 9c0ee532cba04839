// When atlas is SIGKILLed mid-step, the Claude Code it launched lives on (issue 22, defect 1). Its
// hook events must not claim the task as a person's session would: the dead run's owner.json
// stays, so `atlas recover` at once sees the crash, stops the orphan, and runs the step again.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ConversationRecord } from '../src/domain/conversation.js';
import { claudeTaskFixture } from './helpers/claude-task-fixtures.js';
import { atlas, finished, onlyTask, sandbox, startAtlas, waitFor } from './helpers/engine-fixtures.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';

const TEMPLATE = 'name: fix\nsteps:\n  - name: implement\n    type: ai\n    max_attempts: 2\n    prompt: "Fix: {{description}}"\n';

const fx = claudeTaskFixture();

/** Running (a zombie waiting for whoever adopted it to reap it has stopped). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

/** The task's conversation records, oldest first. */
function conversationRows(taskDir: string): ConversationRecord[] {
  const dir = join(taskDir, 'conversations');
  return readdirSync(dir)
    .map((id) => JSON.parse(readFileSync(join(dir, id, 'conversation.json'), 'utf8')) as ConversationRecord)
    .sort((a, b) => a.started_at.localeCompare(b.started_at));
}

describe('an orphaned Claude Code after atlas is killed', () => {
  it('does not take the task; recover sees the crash at once, stops the orphan and finishes the step', async () => {
    const fake = await startFakeAnthropic([
      {
        text: 'Writing a.',
        toolUses: [{ id: 'toolu_a', name: 'Write', input: { file_path: 'a.txt', content: 'a\n' } }],
        usage: { input_tokens: 100, output_tokens: 10 },
      },
      // Answered after atlas is dead: the orphan goes on and fires hook events.
      {
        text: 'Writing b.',
        delayMs: 2500,
        toolUses: [{ id: 'toolu_b', name: 'Write', input: { file_path: 'b.txt', content: 'b\n' } }],
        usage: { input_tokens: 200, output_tokens: 20, cache_read_input_tokens: 7 },
      },
      { text: 'Still here.', hang: true, usage: { input_tokens: 400, output_tokens: 40 } },
      { text: 'Finished after the crash.' },
      { text: 'Finished after the crash.' },
    ]);
    fx.fake = fake;
    const sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE });
    fx.sb = sb;
    const env = claudeEnv(fake, sb.env);
    const child = startAtlas(sb, ['start', 'fix', 'kill me'], { env });
    const done = finished(child);
    await waitFor(() => fake.served() >= 2, 60_000, 'the delayed turn');
    const ownerPath = join(onlyTask(sb).dir, 'owner.json');
    await waitFor(
      () => existsSync(ownerPath) && JSON.parse(readFileSync(ownerPath, 'utf8')).process_groups?.length > 0,
      20_000,
      'the agent in owner.json',
    );
    const dead = JSON.parse(readFileSync(ownerPath, 'utf8'));
    child.kill('SIGKILL');
    await done;
    // The orphan gets its answer, writes b.txt (PostToolUse, a heartbeat event) and asks again.
    await waitFor(() => fake.served() >= 3, 30_000, 'the orphan to go on');
    await waitFor(
      () => existsSync(join(sb.repo, 'b.txt')) || existsSync(join(onlyTask(sb).task.worktree, 'b.txt')),
      10_000,
      "the orphan's write",
    );
    const orphans: number[] = dead.process_groups.map((g: { pid: number }) => g.pid);
    expect(orphans.some(alive)).toBe(true);
    // owner.json is still the dead run's: nobody claimed the task.
    expect(JSON.parse(readFileSync(ownerPath, 'utf8'))).toMatchObject({ pid: dead.pid });

    const status = await atlas(sb, ['--json', 'status'], { env });
    expect(JSON.parse(status.stdout).tasks[0]).toMatchObject({ activity: 'crashed' });
    const recovered = await atlas(sb, ['recover', '--action', 'retry_step'], { env });
    expect(recovered.stdout).toMatch(/stopped 1 process group the crashed run had started/);
    expect(recovered.code, recovered.stdout + recovered.stderr).toBe(0);
    await waitFor(() => !orphans.some(alive), 5_000, 'the orphan to stop');
    expect(onlyTask(sb).hook.state).toBe('completed');
    // The dead run's row counts what the API answered it, the orphan's answer included (from
    // Claude Code's transcript), each message once; the retry's row does not count them again.
    const rows = conversationRows(onlyTask(sb).dir);
    expect(rows[0]).toMatchObject({
      status: 'interrupted',
      stats: { partial: true, cache_read_tokens: 7, total_output_tokens: 30, cost_usd: null },
    });
    expect(rows[0]!.stats.total_input_tokens).toBeGreaterThanOrEqual(300);
    expect(rows[1]!.stats).toMatchObject({ partial: false });
    // The orphan was waiting for an answer when recovery stopped it: recover and usage say that
    // an answer sent then is lost in flight (issue 35).
    expect(rows[0]!.stats.lost_in_flight).toBe(true);
    expect(rows[1]!.stats.lost_in_flight).toBeUndefined();
    expect(recovered.stdout).toMatch(
      /waiting for an answer from the model API: an answer sent while it was being stopped is billed but counted nowhere \(lost in flight\)/,
    );
    const usage = await atlas(sb, ['usage', '--task', onlyTask(sb).task.id], { env });
    expect(usage.stdout).toMatch(/1 partial, 1 in flight/);
    expect(usage.stdout).toContain(
      'in flight: a run stopped while it waited for an answer from the model API; an answer the API sent then is billed but counted nowhere (lost in flight).',
    );
    const usageJson = await atlas(sb, ['usage', '--task', onlyTask(sb).task.id, '--json'], { env });
    expect(JSON.parse(usageJson.stdout).total).toMatchObject({ partial: 1, lost_in_flight: 1 });
  }, 150_000);

  it("Claude Code killed under a live atlas: the step is retried and the cut-off run is a partial row with the transcript's figures", async () => {
    const fake = await startFakeAnthropic([
      {
        text: 'Writing a.',
        toolUses: [{ id: 'toolu_a', name: 'Write', input: { file_path: 'a.txt', content: 'a\n' } }],
        usage: { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 5 },
      },
      { text: 'Thinking.', hang: true, usage: { input_tokens: 150, output_tokens: 15 } },
      { text: 'Done after the kill.', usage: { input_tokens: 50, output_tokens: 5 } },
    ]);
    fx.fake = fake;
    const sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE });
    fx.sb = sb;
    const env = claudeEnv(fake, sb.env);
    const child = startAtlas(sb, ['start', 'fix', 'kill the agent'], { env });
    const done = finished(child);
    await waitFor(() => fake.served() >= 2, 60_000, 'the hanging turn');
    const ownerPath = join(onlyTask(sb).dir, 'owner.json');
    await waitFor(
      () => existsSync(ownerPath) && JSON.parse(readFileSync(ownerPath, 'utf8')).process_groups?.length > 0,
      20_000,
      'the agent in owner.json',
    );
    for (const g of JSON.parse(readFileSync(ownerPath, 'utf8')).process_groups as { pid: number }[]) process.kill(-g.pid, 'SIGKILL');
    const result = await done;
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const rows = conversationRows(onlyTask(sb).dir);
    expect(rows).toHaveLength(2);
    expect(rows[0]!.status).not.toBe('completed');
    expect(rows[0]!.stats).toMatchObject({ partial: true, total_output_tokens: 10, cache_read_tokens: 5, cost_usd: null });
    expect(rows[0]!.stats.total_input_tokens).toBeGreaterThanOrEqual(100);
    expect(rows[1]!.stats).toMatchObject({ partial: false, total_input_tokens: 50, total_output_tokens: 5 });
  }, 150_000);
});
