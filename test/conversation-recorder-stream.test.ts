// The conversation room without an agent: a real Claude Code stream (recorded from 2.1.197 against
// the fake API) replayed through the parser and recorder, the ledger's rules, and the finalizer
// recovery uses for conversations a dead run left running.
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ClaudeEventReader, MAX_TOOL_OUTPUT } from '../src/conversation/claude-events.js';
import { finalizeRunningConversations } from '../src/conversation/finalize.js';
import { conversationFiles } from '../src/conversation/paths.js';
import { conversationOfSession, listConversations, readConversationRecord, readMessages } from '../src/conversation/read.js';
import type { Message } from '../src/domain/conversation.js';
import { recorder, replay, STREAM, useTaskDirs } from './helpers/conversation-recorder-fixtures.js';

const taskDir = useTaskDirs();

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
