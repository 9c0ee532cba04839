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

export function finalizeRunningConversations(taskDir: string, now: Date = new Date(), env: NodeJS.ProcessEnv = process.env): ConversationRecord[] {
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
    const stats = partial.partial && record.agent === 'claude' ? cutOffRunStats(partial, record.session_id, record.started_at, env) : partial;
    const done: ConversationRecord = {
      ...record,
      status: 'interrupted',
      // Its last sign of life: the last message (seconds, so never before the start), else now.
      ended_at: last > 0 ? new Date(Math.max(Date.parse(record.started_at), Math.min(now.getTime(), last * 1000))).toISOString() : now.toISOString(),
      stats,
    };
    writeFileAtomic(files.record, `${JSON.stringify(done, null, 2)}\n`);
    finalized.push(done);
  }
  return finalized;
}
