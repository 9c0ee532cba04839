// The conversation room without an agent: a real Claude Code stream (recorded from 2.1.197 against
// the fake API) replayed through the parser and recorder, the ledger's rules, the finalizer
// recovery uses, the built-in lifecycle defaults and the ai step's outcome helpers.
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { allowedToolsFor } from '../src/agent/allowed-tools.js';
import { describeDenial, parseModelUsage, parsePermissionDenials } from '../src/agent/claude-result.js';
import { ClaudeStreamParser } from '../src/agent/claude-stream.js';
import { configurationError } from '../src/agent/config-errors.js';
import { AgentConversation } from '../src/conversation/agent-conversation.js';
import { builtinLifecycleBus, closeConversation, openConversation, recordingDefaults } from '../src/conversation/bus.js';
import { ClaudeEventReader, MAX_TOOL_OUTPUT } from '../src/conversation/claude-events.js';
import { finalizeRunningConversations } from '../src/conversation/finalize.js';
import { conversationFiles } from '../src/conversation/paths.js';
import { conversationOfSession, listConversations, readConversationRecord, readMessages } from '../src/conversation/read.js';
import { ConversationRecorder } from '../src/conversation/recorder.js';
import type { Message } from '../src/domain/conversation.js';
import type { Hook } from '../src/domain/hook.js';
import { attemptLedger, denialSummary, formatLedger, previousAttemptError } from '../src/engine/executors/ai-outcome.js';
import { watchChangedFiles } from '../src/engine/files-watch.js';
import type { LifecycleBus, LifecycleEvent } from '../src/lifecycle/types.js';
import { makeGitRepo } from './helpers/core-fixtures.js';
import { git } from './helpers/engine-fixtures.js';

const STREAM = readFileSync(join(import.meta.dirname, 'fixtures', 'claude-stream', 'tool-run.jsonl'), 'utf8');

let dirs: string[] = [];
function taskDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'atlas-conv-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function recorder(dir: string, extra: Partial<ConstructorParameters<typeof ConversationRecorder>[0]> = {}) {
  return new ConversationRecorder({
    taskDir: dir,
    taskId: 'task-1',
    stepName: 'implement',
    attempt: 1,
    agent: 'claude',
    model: '',
    continues: null,
    ...extra,
  });
}

/** Parser → reader → recorder, as the ai step wires them (without the bus). */
function replay(rec: ConversationRecorder, text: string): void {
  const parser = new ClaudeStreamParser('/tmp/repo');
  const reader = new ClaudeEventReader(rec.id, {
    message: (m) => rec.recordMessage(m),
    call: (id, usage, model) => {
      rec.setModel(model);
      rec.addCall(id, usage);
    },
    session: (id, model) => {
      rec.setSession(id);
      rec.setModel(model);
    },
    result: (figures, denials) => {
      if (figures) rec.setResult(figures);
      rec.addPermissionDenials(denials);
    },
  });
  for (const u of [...parser.push(text), ...parser.end()]) if (u.kind === 'event') reader.event(u.event);
  reader.end();
}

describe('recording a real Claude Code stream', () => {
  it('writes the messages with tool results joined and the ledger from the result', () => {
    const dir = taskDir();
    const rec = recorder(dir);
    replay(rec, STREAM);
    const record = rec.finish('completed');
    const messages = readMessages(rec.files.messages);
    expect(messages.map((m) => m.role)).toEqual([2, 2, 2]);
    const [first, second, last] = messages as [Message, Message, Message];
    expect(first.body).toBe('Writing.');
    expect(first.tokens).toBe(110);
    expect(first.tool_calls.map((c) => [c.id, c.status])).toEqual([
      ['toolu_w', 'success'],
      ['toolu_b', 'error'],
    ]);
    expect(first.tool_calls[1]!.error).toBe('This command requires approval');
    expect(second.tool_calls.map((c) => [c.name, c.status, c.output])).toEqual([
      ['Bash', 'success', 'hi'],
      ['Bash', 'error', 'Exit code 127\n/bin/bash: line 1: atlas: command not found'],
    ]);
    expect(last.body).toBe('Done.');
    expect(record).toMatchObject({ status: 'completed', session_id: '16e63922-97e0-457a-b623-9316b68a1ae7', model: 'claude-opus-4-8' });
    expect(record.stats).toMatchObject({
      total_input_tokens: 370,
      total_output_tokens: 40,
      cache_read_tokens: 7,
      cache_creation_tokens: 3,
      total_cache_tokens: 10,
      partial: false,
      messages_exchanged: 3,
    });
    expect(record.stats.models).toEqual([
      {
        model: 'claude-opus-4-8[1m]',
        input_tokens: 370,
        output_tokens: 40,
        cache_read_tokens: 7,
        cache_creation_tokens: 3,
        cost_usd: 0.0028722500000000002,
      },
    ]);
    expect(record.permission_denials).toEqual([{ tool_name: 'Bash', tool_use_id: 'toolu_b', tool_input: { command: 'npm test' } }]);
    expect(readConversationRecord(dir, rec.id)).toEqual(record);
  });

  it('never counts twice: the same stream replayed adds no message, no token', () => {
    const rec = recorder(taskDir());
    replay(rec, STREAM);
    replay(rec, STREAM);
    const record = rec.finish('completed');
    expect(readMessages(rec.files.messages)).toHaveLength(3);
    expect(record.stats.total_input_tokens).toBe(370);
    expect(record.permission_denials).toHaveLength(1);
  });

  it('a run cut before its result is partial: input and cache per message id once, output and cost null', () => {
    const rec = recorder(taskDir());
    const cut = STREAM.split('\n')
      .filter((l) => !l.includes('"type":"result"'))
      .join('\n');
    replay(rec, cut);
    const record = rec.finish('failed');
    expect(record.stats).toMatchObject({
      partial: true,
      total_input_tokens: 370,
      cache_read_tokens: 7,
      cache_creation_tokens: 3,
      total_output_tokens: null,
      cost_usd: null,
      models: [],
    });
  });

  it('keeps a crash to the message in flight: whole lines only, pending calls written at the end', () => {
    const rec = recorder(taskDir());
    // up to the first tool_result: the assistant message waits for its second result
    const lines = STREAM.split('\n');
    replay(rec, `${lines.slice(0, 5).join('\n')}\n`);
    expect(readMessages(rec.files.messages)).toHaveLength(0);
    // its tokens are already in the record
    expect(JSON.parse(readFileSync(rec.files.record, 'utf8')).stats).toMatchObject({ total_input_tokens: 100, partial: true });
    const record = rec.finish('interrupted');
    const [held] = readMessages(rec.files.messages);
    expect(held!.tool_calls.map((c) => c.status)).toEqual(['success', 'pending']);
    expect(record.status).toBe('interrupted');
  });

  it('clips long tool outputs, reads text blocks, records user text and orphan tool results', () => {
    const rec = recorder(taskDir());
    const reader = new ClaudeEventReader(
      rec.id,
      { message: (m) => rec.recordMessage(m), call: () => {}, session: () => {}, result: () => {} },
      () => 42,
    );
    reader.event({ type: 'user', uuid: 'u-1', message: { content: 'plain user text' } });
    reader.event({
      type: 'user',
      message: {
        content: [
          { type: 'text', text: 'block text' },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_orphan',
            content: [{ type: 'image' }, { type: 'text', text: 'x'.repeat(MAX_TOOL_OUTPUT + 10) }],
          },
        ],
      },
    });
    reader.event({
      type: 'assistant',
      message: { content: [{ type: 'tool_use', id: 't1', name: 'Read', input: { file_path: 'a' } }, { type: 'thinking' }, 'junk'] },
    });
    reader.event({ type: 'stream_event' });
    reader.end();
    rec.finish('completed');
    const messages = readMessages(rec.files.messages);
    expect(messages.map((m) => [m.role, m.key])).toEqual([
      [1, 'u-1'],
      [3, 'tool-toolu_orphan'],
      [1, 'user-2'],
      [2, expect.stringMatching(/^assistant-/)],
    ]);
    expect(messages[1]!.body.endsWith('(18 more characters not kept)')).toBe(true);
    expect(messages[1]!.body.startsWith('[image]\n')).toBe(true);
    expect(messages[0]!.timestamp).toBe(42);
    expect(messages[3]!.tool_calls[0]).toMatchObject({ id: 't1', status: 'pending' });
  });

  it('a message continued after one of its tools ran is a second part, its tokens counted once', () => {
    const rec = recorder(taskDir());
    const usage = { input_tokens: 50, output_tokens: 1, cache_read_input_tokens: 5 };
    const lines = [
      { type: 'assistant', message: { id: 'msg_a', content: [{ type: 'tool_use', id: 'ta', name: 'Read', input: {} }], usage } },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'ta', content: 'A' }] } },
      {
        type: 'assistant',
        message: { id: 'msg_a', content: [{ type: 'tool_use', id: 'tb', name: 'Bash', input: { command: 'ls' } }], usage },
      },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'tb', content: 'B' }] } },
    ];
    replay(rec, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const record = rec.finish('failed');
    expect(
      readMessages(rec.files.messages).map((m) => [m.key, m.tokens, m.tool_calls.map((c) => `${c.id}:${c.status}:${c.output}`)]),
    ).toEqual([
      ['msg_a', 55, ['ta:success:A']],
      ['msg_a.2', 0, ['tb:success:B']],
    ]);
    expect(record.stats).toMatchObject({ total_input_tokens: 50, cache_read_tokens: 5, partial: true });
  });

  it('a half-written last line (a crash inside a write) is ignored by readers; damaged lines are skipped', () => {
    const rec = recorder(taskDir());
    rec.recordMessage({ key: 'prompt', conversation_id: rec.id, body: 'hi', role: 1, timestamp: 1, tokens: 0, tool_calls: [] });
    appendFileSync(rec.files.messages, 'not json\n{"key":"cut","role":2,"bo');
    expect(readMessages(rec.files.messages).map((m) => m.key)).toEqual(['prompt']);
    expect(readMessages(join(rec.files.dir, 'missing.jsonl'))).toEqual([]);
  });
});

describe('finalizing conversations a dead run left running', () => {
  it('marks them interrupted with the partial row the recorder kept, counting whole messages', () => {
    const dir = taskDir();
    const rec = recorder(dir, { sessionId: 'sess-a' });
    replay(rec, `${STREAM.split('\n').slice(0, 8).join('\n')}\n`);
    const done = recorder(dir);
    done.finish('completed');
    // the run dies here: no finish()
    const [closed, ...none] = finalizeRunningConversations(dir, new Date(Date.now() + 60_000));
    expect(none).toHaveLength(0);
    expect(closed).toMatchObject({ id: rec.id, status: 'interrupted' });
    expect(closed!.stats).toMatchObject({
      partial: true,
      total_input_tokens: 220,
      total_output_tokens: null,
      cost_usd: null,
      messages_exchanged: 1,
    });
    expect(closed!.ended_at).not.toBeNull();
    expect(readConversationRecord(dir, rec.id)?.status).toBe('interrupted');
    // a second pass finds nothing left
    expect(finalizeRunningConversations(dir)).toEqual([]);
    expect(conversationOfSession(dir, 'sess-16e63922')).toBeUndefined();
    expect(conversationOfSession(dir, '16e63922-97e0-457a-b623-9316b68a1ae7')?.id).toBe(rec.id);
  });

  it('a run that died before any message ends now; one with messages ends at its last one, never before its start', () => {
    const dir = taskDir();
    const empty = recorder(dir, { now: () => new Date('2026-01-01T00:00:00.000Z') });
    rmSync(empty.files.messages);
    const talked = recorder(dir, { now: () => new Date('2026-01-01T00:00:10.500Z') });
    talked.recordMessage({
      key: 'prompt',
      conversation_id: talked.id,
      body: 'p',
      role: 1,
      timestamp: Date.parse('2026-01-01T00:00:10Z') / 1000,
      tokens: 0,
      tool_calls: [],
    });
    const closed = finalizeRunningConversations(dir, new Date('2026-01-01T01:00:00.000Z'));
    expect(closed.map((c) => [c.id, c.ended_at, c.stats.messages_exchanged])).toEqual([
      [empty.id, '2026-01-01T01:00:00.000Z', 0],
      [talked.id, '2026-01-01T00:00:10.500Z', 1],
    ]);
  });

  it('keeps final figures a run counted before it died, and skips what is not a conversation', () => {
    const dir = taskDir();
    const rec = recorder(dir);
    replay(rec, STREAM);
    mkdirSync(join(dir, 'conversations', 'not-a-conversation'));
    mkdirSync(join(dir, 'conversations', 'conv-000000000000'));
    writeFileSync(join(dir, 'conversations', 'conv-000000000000', 'conversation.json'), '{"id": 1}');
    const [closed] = finalizeRunningConversations(dir);
    expect(closed!.stats).toMatchObject({ partial: false, total_output_tokens: 40, messages_exchanged: 3 });
    expect(listConversations(dir)).toHaveLength(1);
    expect(listConversations(join(dir, 'nowhere'))).toEqual([]);
    expect(() => conversationFiles(dir, '../escape')).toThrow(/not a conversation id/);
  });
});

describe('the built-in lifecycle defaults', () => {
  const base = { task_id: 'task-1', step_name: 'implement', workspace: '/w', task_dir: '/t' };

  it('record messages and usage through the bus, in order, and the end through OnStreamFinish', async () => {
    const dir = taskDir();
    const seen: LifecycleEvent[] = [];
    const defaults = recordingDefaults();
    const bus: LifecycleBus = {
      coldStart: async () => {},
      message: async (e) => {
        await defaults.message(e);
        seen.push(e);
      },
      streamFinish: async (e) => {
        await defaults.streamFinish(e);
        seen.push(e);
      },
      terminate: async () => {},
    };
    const conv = new AgentConversation({
      lifecycle: bus,
      taskDir: dir,
      taskId: 'task-1',
      stepName: 'implement',
      attempt: 1,
      agent: 'claude',
      model: '',
      workspace: '/w',
      prompt: 'go',
    });
    const parser = new ClaudeStreamParser('/tmp/repo');
    for (const u of parser.push(STREAM)) conv.update(u);
    const record = await conv.end({ ok: true, interrupted: false });
    expect(seen.map((e) => (e.point === 'on_message' ? `${e.point}:${e.message.role}` : e.point))).toEqual([
      'on_message:1',
      'on_message:2',
      'on_message:3',
      'on_message:3',
      'on_message:2',
      'on_message:3',
      'on_message:3',
      'on_message:2',
      'on_stream_finish',
    ]);
    const finish = seen.at(-1) as Extract<LifecycleEvent, { point: 'on_stream_finish' }>;
    expect(finish).toMatchObject({
      ok: true,
      error: null,
      conversation_id: conv.id,
      usage: { input_tokens: 370, output_tokens: 40, cache_read_tokens: 7, cache_creation_tokens: 3, partial: false },
    });
    expect(record).toMatchObject({ status: 'completed' });
    expect(record.stats.messages_exchanged).toBe(4);
    expect(conv.permissionDenials).toHaveLength(1);
  });

  it('a bus without the defaults still leaves a finished record; interrupted runs say so', async () => {
    const dir = taskDir();
    const silent: LifecycleBus = {
      coldStart: async () => {},
      message: async () => {},
      streamFinish: async () => {},
      terminate: async () => {},
    };
    const conv = new AgentConversation({
      lifecycle: silent,
      taskDir: dir,
      taskId: 't',
      stepName: 's',
      attempt: 1,
      agent: 'command',
      model: '',
      workspace: '/w',
      prompt: 'p',
    });
    expect((await conv.end({ ok: false, interrupted: true, output: 'partial answer' })).status).toBe('interrupted');
    const viaDefaults = new AgentConversation({
      lifecycle: builtinLifecycleBus(),
      taskDir: dir,
      taskId: 't',
      stepName: 's',
      attempt: 2,
      agent: 'command',
      model: '',
      workspace: '/w',
      prompt: 'p',
    });
    const ended = await viaDefaults.end({ ok: false, error: 'boom', interrupted: true, output: 'partial answer' });
    expect(ended.status).toBe('interrupted');
    expect(ended.stats).toMatchObject({ partial: false, total_input_tokens: 0, cost_usd: null, messages_exchanged: 2 });
    const failed = new AgentConversation({
      lifecycle: builtinLifecycleBus(),
      taskDir: dir,
      taskId: 't',
      stepName: 's',
      attempt: 3,
      agent: 'command',
      model: '',
      workspace: '/w',
      prompt: 'p',
    });
    expect((await failed.end({ ok: false, interrupted: false })).status).toBe('failed');
  });

  it('reports a failing default and never throws; events of unknown conversations are ignored', async () => {
    const dir = taskDir();
    const errors: string[] = [];
    const bus = builtinLifecycleBus((point) => errors.push(point));
    const rec = recorder(dir);
    openConversation(rec);
    // conversation.json replaced by a folder: every rewrite of it fails
    rmSync(rec.files.record);
    mkdirSync(rec.files.record);
    await bus.streamFinish({ ...base, point: 'on_stream_finish', conversation_id: rec.id, ok: true, usage: null, error: null });
    expect(errors).toEqual(['on_stream_finish']);
    closeConversation(rec.id);
    await bus.message({
      ...base,
      point: 'on_message',
      conversation_id: 'conv-ffffffffffff',
      message: { key: 'k', conversation_id: 'x', body: '', role: 1, timestamp: 0, tokens: 0, tool_calls: [] },
    });
    await bus.message({
      ...base,
      point: 'on_message',
      conversation_id: null,
      message: { key: 'k', conversation_id: 'x', body: '', role: 1, timestamp: 0, tokens: 0, tool_calls: [] },
    });
    await bus.streamFinish({ ...base, point: 'on_stream_finish', conversation_id: null, ok: true, usage: null, error: null });
    await bus.coldStart({ ...base, point: 'on_cold_start', conversation_id: null, reason: 'new_workspace' });
    await bus.terminate({ ...base, point: 'on_terminate', conversation_id: null, reason: 'completed' });
    openConversation(rec);
    const throwing = builtinLifecycleBus((point) => errors.push(point));
    rec.recordMessage = () => {
      throw new Error('disk full');
    };
    await throwing.message({
      ...base,
      point: 'on_message',
      conversation_id: rec.id,
      message: { key: 'k', conversation_id: rec.id, body: '', role: 1, timestamp: 0, tokens: 0, tool_calls: [] },
    });
    expect(errors).toEqual(['on_stream_finish', 'on_message']);
    closeConversation(rec.id);
  });

  it('a resumed session continues the conversation that had it', async () => {
    const dir = taskDir();
    const first = new AgentConversation({
      lifecycle: builtinLifecycleBus(),
      taskDir: dir,
      taskId: 't',
      stepName: 's',
      attempt: 1,
      agent: 'claude',
      model: '',
      workspace: '/w',
      prompt: 'p',
    });
    first.update({ kind: 'event', event: { type: 'system', subtype: 'init', session_id: 'sess-1', model: 'm' } });
    first.update({ kind: 'text', text: 'ignored here' });
    await first.end({ ok: false, error: 'cut', interrupted: false });
    const second = new AgentConversation({
      lifecycle: builtinLifecycleBus(),
      taskDir: dir,
      taskId: 't',
      stepName: 's',
      attempt: 2,
      agent: 'claude',
      model: '',
      workspace: '/w',
      prompt: 'go on',
      resumeSessionId: 'sess-1',
    });
    const record = await second.end({ ok: true, interrupted: false });
    expect(record).toMatchObject({ continues: first.id, session_id: 'sess-1' });
  });
});

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
