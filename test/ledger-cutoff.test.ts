// A cut-off Claude Code run's figures from its transcript (issue 22): only this run's messages,
// each message id once, found under CLAUDE_CONFIG_DIR; and refusals sorted into the guard's and the
// permission settings' for the step's warning.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cutOffRunStats, findClaudeTranscript, transcriptUsage } from '../src/conversation/claude-transcript-usage.js';
import { emptyStats } from '../src/domain/conversation.js';
import { denialWarnings, sortDenials } from '../src/engine/executors/ai-outcome.js';
import { tempDir } from './helpers/core-fixtures.js';

const SESSION = '0b1d3c5e-aaaa-bbbb-cccc-123456789abc';
const line = (id: string, at: string, usage: Record<string, number>) =>
  JSON.stringify({ type: 'assistant', timestamp: at, message: { id, model: 'claude-x', usage } });

function transcript(): { env: NodeJS.ProcessEnv; path: string } {
  const config = tempDir();
  const dir = join(config, 'projects', '-tmp-project');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${SESSION}.jsonl`);
  writeFileSync(
    path,
    [
      line('m-old', '2026-01-01T00:00:00Z', { input_tokens: 1000, output_tokens: 100 }),
      line('m-old', '2026-01-01T00:00:09Z', { input_tokens: 1000, output_tokens: 100 }),
      line('m1', '2026-01-01T00:01:00Z', { input_tokens: 10, output_tokens: 3, cache_read_input_tokens: 4 }),
      line('m1', '2026-01-01T00:01:01Z', { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 4 }),
      line('m2', '2026-01-01T00:01:05Z', { input_tokens: 20, output_tokens: 7, cache_creation_input_tokens: 2 }),
      '{"type":"assistant","message":{"id":"m3"',
    ].join('\n'),
  );
  return { env: { CLAUDE_CONFIG_DIR: config, HOME: tempDir() }, path };
}

describe('a cut-off run from its transcript', () => {
  it("counts this run's messages once each, leaving out an earlier run's", () => {
    const { path } = transcript();
    expect(transcriptUsage(path, { sinceMs: Date.parse('2026-01-01T00:00:30Z') })).toMatchObject({
      messages: 2,
      input_tokens: 30,
      output_tokens: 12,
      cache_read_tokens: 4,
      cache_creation_tokens: 2,
    });
    expect(transcriptUsage(path).messages).toBe(3);
  });

  it('finds the transcript by session id, and refuses an id that is not one', () => {
    const { env, path } = transcript();
    expect(findClaudeTranscript(SESSION, env)).toBe(path);
    expect(findClaudeTranscript('../etc/passwd', env)).toBeUndefined();
    expect(findClaudeTranscript('0000-missing', env)).toBeUndefined();
  });

  it('a partial row takes the larger figures, keeps the cost unknown; without a transcript it is unchanged', () => {
    const { env } = transcript();
    const stream = {
      ...emptyStats(),
      total_input_tokens: 25,
      cache_read_tokens: 9,
      partial: true,
      total_output_tokens: null,
      cost_usd: null,
    };
    const settled = cutOffRunStats(stream, SESSION, '2026-01-01T00:00:30Z', env);
    expect(settled).toMatchObject({
      total_input_tokens: 30,
      total_output_tokens: 12,
      cache_read_tokens: 9,
      cache_creation_tokens: 2,
      total_cache_tokens: 11,
      partial: true,
      cost_usd: null,
    });
    expect(settled.models).toEqual([expect.objectContaining({ model: 'claude-x', cost_usd: null })]);
    expect(cutOffRunStats(stream, null, '2026-01-01T00:00:30Z', env)).toBe(stream);
    expect(cutOffRunStats(stream, 'no-such-session', '2026-01-01T00:00:30Z', env)).toBe(stream);
    expect(cutOffRunStats(stream, SESSION, '2026-01-02T00:00:00Z', env)).toBe(stream);
  });
});

describe('refusals', () => {
  it("tells the guard's (never how to allow them) from the permission settings' (how to allow them)", () => {
    const home = tempDir();
    const cwd = tempDir();
    const denials = [
      { tool_name: 'Read', tool_use_id: 't1', tool_input: { file_path: join(home, 'keys', 'master.key') } },
      { tool_name: 'Bash', tool_use_id: 't2', tool_input: { command: `cat ${home}/config.yaml` } },
      { tool_name: 'Bash', tool_use_id: 't3', tool_input: { command: 'curl http://example.invalid' } },
    ];
    const sorted = sortDenials(denials, cwd, home);
    expect(sorted.guard.map((g) => g.denial.tool_use_id)).toEqual(['t1', 't2']);
    expect(sorted.permission.map((d) => d.tool_use_id)).toEqual(['t3']);
    const [guard, permission] = denialWarnings(sorted);
    expect(guard).toMatch(
      /^atlas refused 2 tool calls of the agent \(atlas guard\): Read\(.*master\.key\): .*\(and 1 more, in the hook's event\)$/,
    );
    expect(guard).not.toContain('allowed_tools');
    expect(permission).toContain('ai.allowed_tools');
    expect(denialWarnings(sortDenials([], cwd, home))).toEqual([]);
  });
});
