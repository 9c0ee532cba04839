// Conversations a dead run left `running` (SIGKILL, power loss): recovery closes them as
// interrupted with a partial ledger row. The row is the one the recorder kept up to date at every
// new API call (input and cache tokens, each message id once); output tokens and cost stay unknown
// unless the final result had already been counted. A Claude Code run's row takes its transcript's
// figures when they say more. messages_exchanged counts the whole lines of messages.jsonl.
import type { ConversationRecord } from '../domain/conversation.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { cutOffRunStats } from './claude-transcript-usage.js';
import { conversationFiles } from './paths.js';
import { listConversations, readMessages } from './read.js';

/**
 * Was the run waiting for a model API answer at its last recorded sign? Its last message is the
 * prompt, a tool result, or an assistant message whose tools had all answered (the next request
 * was out); a final answer (no tool calls) is the end of a turn. An assistant message whose tools
 * were still running is not written yet, so a run cut off then also counts (its tools' results
 * would have gone to the API next).
 */
function waitingForAnswer(messages: ReturnType<typeof readMessages>): boolean {
  const last = messages[messages.length - 1];
  return last?.role !== 2 || (Array.isArray(last.tool_calls) && last.tool_calls.length > 0);
}

export function finalizeRunningConversations(
  taskDir: string,
  now: Date = new Date(),
  env: NodeJS.ProcessEnv = process.env,
): ConversationRecord[] {
  const finalized: ConversationRecord[] = [];
  for (const record of listConversations(taskDir)) {
    if (record.status !== 'running') continue;
    const files = conversationFiles(taskDir, record.id);
    const messages = readMessages(files.messages);
    const last = messages.reduce((t, m) => Math.max(t, typeof m.timestamp === 'number' ? m.timestamp : 0), 0);
    const partial = record.stats.partial
      ? { ...record.stats, total_output_tokens: null, cost_usd: null, messages_exchanged: messages.length }
      : { ...record.stats, messages_exchanged: messages.length };
    // A Claude Code run goes on after atlas died (an orphan, until recovery stops it): what its
    // transcript says it was answered, this run's messages only, is what the row counts.
    // (A run cut off before its first API call has no figures at all yet: the transcript may.)
    const noFigures = partial.total_input_tokens + partial.total_cache_tokens === 0;
    const settled =
      record.agent === 'claude' && (partial.partial || noFigures)
        ? cutOffRunStats(partial, record.session_id, record.started_at, env)
        : partial;
    const stats =
      record.agent === 'claude' && settled.partial && waitingForAnswer(messages) ? { ...settled, lost_in_flight: true } : settled;
    const done: ConversationRecord = {
      ...record,
      status: 'interrupted',
      // Its last sign of life: the last message (seconds, so never before the start), else now.
      ended_at:
        last > 0
          ? new Date(Math.max(Date.parse(record.started_at), Math.min(now.getTime(), last * 1000))).toISOString()
          : now.toISOString(),
      stats,
    };
    writeFileAtomic(files.record, `${JSON.stringify(done, null, 2)}\n`);
    finalized.push(done);
  }
  return finalized;
}
