// What the ai step tells, without an agent: the ledger of an attempt, odd result fields and denials,
// the previous attempt's error, configuration errors, allowed tools, and files changed during a step.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allowedToolsFor } from '../src/agent/allowed-tools.js';
import { describeDenial, parseModelUsage, parsePermissionDenials } from '../src/agent/claude-result.js';
import { configurationError } from '../src/agent/config-errors.js';
import type { Hook } from '../src/domain/hook.js';
import { attemptLedger, denialSummary, formatLedger, previousAttemptError } from '../src/engine/executors/ai-outcome.js';
import { watchChangedFiles } from '../src/engine/files-watch.js';
import { makeGitRepo } from './helpers/core-fixtures.js';
import { git } from './helpers/engine-fixtures.js';

describe('what the ai step tells', () => {
  it('sums the ledger of an attempt across runs; unknown stays unknown', () => {
    const row = (over: object) =>
      ({
        id: 'conv-1',
        stats: {
          total_input_tokens: 10,
          total_output_tokens: 5,
          cache_read_tokens: 2,
          cache_creation_tokens: 1,
          total_cache_tokens: 3,
          cost_usd: 0.5,
          partial: false,
          models: [],
          messages_exchanged: 1,
          ...over,
        },
      }) as any;
    const full = attemptLedger([row({}), row({})]);
    expect(full).toMatchObject({ input_tokens: 20, output_tokens: 10, cost_usd: 1, partial: false });
    expect(formatLedger(full)).toBe('26 in / 10 out tokens, $1.00');
    const cut = attemptLedger([row({}), row({ total_output_tokens: null, cost_usd: null, partial: true })]);
    expect(formatLedger(cut)).toBe('26 in / output unknown, cost unknown');
    expect(
      formatLedger(
        attemptLedger([
          row({ total_input_tokens: 0, cache_read_tokens: 0, cache_creation_tokens: 0, total_output_tokens: 0, cost_usd: null }),
        ]),
      ),
    ).toBe('');
    expect(formatLedger(attemptLedger([row({ cost_usd: 0.0012 })]))).toBe('13 in / 5 out tokens, $0.0012');
  });

  it('reads odd result fields defensively and sums up denials', () => {
    expect(parseModelUsage(null)).toEqual([]);
    expect(parseModelUsage({ a: 1, m: { inputTokens: -3, outputTokens: 'x', costUSD: Infinity } })).toEqual([
      { model: 'm', input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_creation_tokens: 0, cost_usd: null },
    ]);
    expect(parsePermissionDenials('nope')).toEqual([]);
    expect(parsePermissionDenials([null, {}])).toEqual([{ tool_name: 'tool', tool_use_id: '', tool_input: {} }]);
    const many = Array.from({ length: 7 }, (_, i) => ({ tool_name: 'Bash', tool_use_id: `t${i}`, tool_input: { command: `c${i}` } }));
    expect(denialSummary(many)).toBe('the agent was refused 7 tool calls: Bash(c0), Bash(c1), Bash(c2), Bash(c3), Bash(c4), … (2 more)');
  });

  it('finds the error of the previous attempt of the same step', () => {
    const hook = {
      history: [
        { trigger: 'step_start', details: { step_index: 0 } },
        { trigger: 'step_retry', details: { step_index: 0, error: 'boom' } },
        { trigger: 'step_start', details: { step_index: 0 } },
      ],
    } as unknown as Hook;
    expect(previousAttemptError(hook, 0)).toBe('boom');
    expect(previousAttemptError(hook, 1)).toBeUndefined();
    expect(
      previousAttemptError({ history: [{ trigger: 'step_complete', details: { step_index: 0 } }] } as unknown as Hook, 0),
    ).toBeUndefined();
  });

  it('recognises configuration errors no retry can fix', () => {
    expect(
      configurationError('--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons')?.hint,
    ).toContain('IS_SANDBOX=1');
    expect(
      configurationError("error: option '--permission-mode <mode>' argument 'x' is invalid. Allowed choices are a, b.")?.error,
    ).toContain('permission mode');
    expect(configurationError('Invalid API key · Please run /login')?.hint).toContain('ANTHROPIC_API_KEY');
    expect(
      configurationError('API Error: 404 {"type":"error","error":{"type":"not_found_error","message":"model: nope"}}')?.hint,
    ).toContain('ai.model');
    expect(
      configurationError("There's an issue with the selected model (nope). It may not exist or you may not have access to it.")?.hint,
    ).toContain('ai.model');
    expect(configurationError('network is down')).toBeUndefined();
  });

  it('allows the validation commands and atlas checkpoint by default, plus config and step tools', () => {
    const repo = makeGitRepo();
    writeFileSync(join(repo, 'package.json'), JSON.stringify({ scripts: { test: 'vitest', lint: 'eslint .' } }));
    const config = { ai: { allowed_tools: ['Read', 'Bash(make x)'], default_allowed_tools: true }, validation: { commands: [] } } as any;
    const steps = [{ type: 'validation', commands: [] }, { type: 'validation', commands: ['make check'] }, { type: 'ai' }] as any;
    expect(allowedToolsFor({ allowed_tools: ['WebFetch', 'Read'] }, { steps, worktree: repo }, config)).toEqual([
      'Read',
      'Bash(make x)',
      'WebFetch',
      'Bash(atlas checkpoint:*)',
      'Bash(npm run lint:*)',
      'Bash(npm test:*)',
      'Bash(make check:*)',
    ]);
    // nothing detected: the validation step will say so itself
    expect(allowedToolsFor({}, { steps, worktree: join(repo, 'nowhere') }, config)).toContain('Bash(make check:*)');
    expect(allowedToolsFor({}, { steps, worktree: repo }, { ...config, ai: { allowed_tools: [], default_allowed_tools: false } })).toEqual(
      [],
    );
    expect(describeDenial({ tool_name: 'WebFetch', tool_use_id: '', tool_input: {} })).toBe('WebFetch');
    expect(describeDenial({ tool_name: 'Bash', tool_use_id: '', tool_input: { command: 'x'.repeat(100) } })).toMatch(/^Bash\(x{79}…\)$/);
  });

  it('sees files changed by any means while a step runs', async () => {
    const repo = makeGitRepo();
    writeFileSync(join(repo, 'before.txt'), 'x');
    const seen: string[][] = [];
    const watch = watchChangedFiles(repo, new Set(['before.txt']), 50, (p) => seen.push(p));
    writeFileSync(join(repo, 'during.txt'), 'y');
    await new Promise((r) => setTimeout(r, 300));
    expect(seen).toEqual([['during.txt']]);
    writeFileSync(join(repo, 'last.txt'), 'z');
    expect(await watch.stop()).toEqual(['during.txt', 'last.txt']);
    git(repo, 'status');
  });
});
