// A conversation as people read it: who said what, and each tool call on one line with its input
// and status. Used by `atlas conversation` and by HOOK.md's "last messages".
import type { ConversationRecord, Message, ToolCall } from '../domain/conversation.js';
import { totalsLine, totalsOf } from './totals.js';

const ROLE_LABEL: Record<Message['role'], string> = { 1: 'user', 2: 'assistant', 3: 'tool' };

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The input of a tool call in one line: its most telling field first (a path, a command), then the rest. */
export function toolInputLine(input: Record<string, unknown>, max = 100): string {
  const preferred = ['file_path', 'path', 'command', 'pattern', 'url', 'query', 'description'];
  const keys = Object.keys(input).sort((a, b) => {
    const ia = preferred.indexOf(a);
    const ib = preferred.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
  });
  const parts = keys.map((k) => {
    const v = input[k];
    const text = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
    return `${k}=${oneLine(text, 60)}`;
  });
  return oneLine(parts.join(' '), max);
}

const STATUS_MARK: Record<ToolCall['status'], string> = { success: '✓', error: '✗', pending: '…' };

export function toolCallLine(call: ToolCall): string {
  const error = call.status === 'error' && call.error ? `: ${oneLine(call.error, 80)}` : '';
  return `→ ${call.name} ${toolInputLine(call.input)} [${STATUS_MARK[call.status]} ${call.status}${error}]`;
}

function time(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().slice(11, 19);
}

/** One message as indented lines; long bodies are cut at `maxBody` characters (0: never). */
export function messageLines(m: Message, maxBody = 0): string[] {
  const lines = [`[${time(m.timestamp)}] ${ROLE_LABEL[m.role]}${m.tokens > 0 ? ` (${m.tokens} tokens)` : ''}`];
  const body = maxBody > 0 && m.body.length > maxBody ? `${m.body.slice(0, maxBody)}…` : m.body;
  for (const l of body.trim().split('\n')) if (body.trim() !== '') lines.push(`    ${l}`);
  for (const call of m.tool_calls) lines.push(`    ${toolCallLine(call)}`);
  return lines;
}

export function conversationHeader(c: ConversationRecord): string[] {
  const lines = [
    `conversation ${c.id} · step ${c.step_name}, attempt ${c.attempt} · ${c.agent}${c.model ? ` (${c.model})` : ''} · ${c.status}${c.stats.partial ? ' (partial)' : ''}`,
    `  started ${c.started_at}${c.ended_at ? `, ended ${c.ended_at}` : ''}${c.session_id ? ` · session ${c.session_id}` : ''}`,
  ];
  if (c.continues) lines.push(`  continues ${c.continues}`);
  lines.push(`  tokens ${totalsLine(totalsOf([c.stats]))}`);
  return lines;
}

export function transcript(c: ConversationRecord, messages: Message[]): string {
  const lines = conversationHeader(c);
  lines.push('');
  if (messages.length === 0) lines.push('  (no messages recorded)');
  for (const m of messages) lines.push(...messageLines(m).map((l) => `  ${l}`));
  return lines.join('\n');
}
