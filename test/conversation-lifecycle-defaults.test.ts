// The conversation room without an agent: the built-in lifecycle defaults recording a replayed real
// Claude Code stream through the bus, failing defaults, and resumed sessions.
import { mkdirSync, rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ClaudeStreamParser } from '../src/agent/claude-stream.js';
import { AgentConversation } from '../src/conversation/agent-conversation.js';
import { builtinLifecycleBus, closeConversation, openConversation, recordingDefaults } from '../src/conversation/bus.js';
import type { LifecycleBus, LifecycleEvent } from '../src/lifecycle/types.js';
import { recorder, STREAM, useTaskDirs } from './helpers/conversation-recorder-fixtures.js';

const taskDir = useTaskDirs();

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
