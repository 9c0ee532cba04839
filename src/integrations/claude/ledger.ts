// Tokens of a Claude Code session that atlas did not launch, into the task's ledger (the
// conversation store of src/conversation/: `conversations/<id>/conversation.json`). The id is
// derived from the session id and the totals are recomputed from the transcript on each Stop, so
// repeated Stops update one record and never add twice. Sessions atlas launched are counted from
// their stream instead: the hook sees ATLAS_CLAUDE_LAUNCHED (atlas's --settings) and skips this,
// and a conversation the stream recorded for the same session id wins as well.
import { mkdirSync } from 'node:fs';
import type { UsageTotals } from '../../conversation/claude-transcript-usage.js';
import { conversationFiles } from '../../conversation/paths.js';
import { conversationOfSession, readConversationRecord } from '../../conversation/read.js';
import type { ConversationRecord, ConversationStatus } from '../../domain/conversation.js';
import { emptyStats } from '../../domain/conversation.js';
import type { Hook } from '../../domain/hook.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { withLock } from '../../store/lock.js';
import { shortHash } from './places.js';

/** `conv-` + 12 hex from the session id (a UUID's hex digits; other ids are hashed). */
export function conversationIdFor(sessionId: string): string {
  const hex = sessionId.toLowerCase().replace(/[^0-9a-f]/g, '');
  const digits = hex.length >= 12 ? hex.slice(0, 12) : `${shortHash(sessionId)}${shortHash(`${sessionId}#`)}`.slice(0, 12);
  return `conv-${digits}`;
}

export interface LedgerInput {
  taskDir: string;
  taskId: string;
  sessionId: string;
  hook: Hook | undefined;
  usage: UsageTotals;
  startedAt: string;
  at: string;
  status: ConversationStatus;
}

/**
 * Creates or updates the session's record (the step and start it was first seen with stay);
 * undefined when the stream of an atlas run already records this session.
 */
export async function recordSessionUsage(input: LedgerInput): Promise<ConversationRecord | undefined> {
  const id = conversationIdFor(input.sessionId);
  const recorded = conversationOfSession(input.taskDir, input.sessionId);
  if (recorded && recorded.id !== id) return undefined;
  const files = conversationFiles(input.taskDir, id);
  mkdirSync(files.dir, { recursive: true });
  const path = files.record;
  return withLock(path, () => {
    const previous = readConversationRecord(input.taskDir, id);
    const u = input.usage;
    const stats = {
      ...emptyStats(),
      messages_exchanged: u.messages,
      total_input_tokens: u.input_tokens,
      total_output_tokens: u.output_tokens,
      total_cache_tokens: u.cache_read_tokens + u.cache_creation_tokens,
      cache_read_tokens: u.cache_read_tokens,
      cache_creation_tokens: u.cache_creation_tokens,
      // Claude Code's hooks carry no price: the cost is unknown, not zero.
      cost_usd: null,
      // Figures from the transcript, not the agent's own final result.
      partial: true,
      models: u.models.map((m) => ({ ...m, cost_usd: null })),
    };
    const record: ConversationRecord = {
      id,
      task_id: input.taskId,
      step_name: previous?.step_name ?? input.hook?.current_step?.step_name ?? '',
      attempt: previous?.attempt ?? input.hook?.current_step?.attempt ?? 1,
      agent: 'claude',
      model: u.model || previous?.model || '',
      session_id: input.sessionId,
      started_at: previous?.started_at ?? input.startedAt,
      ended_at: input.status === 'running' ? null : input.at,
      status: input.status,
      continues: previous?.continues ?? null,
      stats,
    };
    writeFileAtomic(path, `${JSON.stringify(record, null, 2)}\n`);
    return record;
  });
}
