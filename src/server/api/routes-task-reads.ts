// Reads for the board beyond a task's hook: the agent runs (conversations) a task recorded, with
// their messages and tool calls and the task's ledger totals, and the account's usage.
import { conversationFiles as runFiles } from '../../conversation/paths.js';
import { listConversations, readConversationRecord, readMessages } from '../../conversation/read.js';
import { totalsJson, totalsOf } from '../../conversation/totals.js';
import { CONVERSATION_ID_PATTERN } from '../../domain/conversation.js';
import { conversationFiles } from '../conversations/conversation-store.js';
import type { Conversations } from '../conversations/conversations.js';
import { HttpError, sendJson } from '../http/http.js';
import { numberKey, pageRequest, paginate } from '../http/pagination.js';
import type { Router } from '../http/router.js';
import type { Tasks } from '../tasks/tasks.js';
import type { Handler } from './request.js';
import type { UsageItem } from './usage-report.js';
import { CONVERSATIONS_KEY, usageReport } from './usage-report.js';

export function addTaskReadRoutes(router: Router<Handler>, home: string, conversations: Conversations, tasks: Tasks): void {
  router.add('GET', '/tasks/:id/conversations', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    const runs = listConversations(record.dir);
    sendJson(r.res, 200, { task_id: record.task_id, conversations: runs, total: totalsJson(totalsOf(runs.map((c) => c.stats))) });
  });

  router.add('GET', '/tasks/:id/conversations/:conversationId/messages', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    const id = r.params['conversationId']!;
    if (!CONVERSATION_ID_PATTERN.test(id) || !readConversationRecord(record.dir, id))
      throw new HttpError(404, 'not_found', `task ${record.task_id} has no conversation ${id}`);
    // Messages only ever get appended: the position is a stable key.
    const indexed = readMessages(runFiles(record.dir, id).messages).map((m, i) => ({ m, k: numberKey(i) }));
    const page = paginate(indexed, pageRequest(r.url), (e) => [e.k], ['asc']);
    sendJson(r.res, 200, { conversation_id: id, messages: page.items.map((e) => e.m), next_cursor: page.next_cursor });
  });

  router.add('GET', '/usage', async (r) => {
    const items: UsageItem[] = [];
    for (const t of await tasks.recordsOf(r.account)) {
      for (const c of listConversations(t.dir))
        items.push({ account: r.account, day: c.started_at.slice(0, 10), template: t.template, stats: c.stats });
    }
    // A conversation's totals are the sum of its turns, each a recorded run: each turn counts on its own day.
    for (const c of await conversations.list(r.account)) {
      const turns = listConversations(conversationFiles(home, r.account, c.id).dir);
      if (turns.length === 0)
        items.push({ account: r.account, day: c.updated_at.slice(0, 10), template: CONVERSATIONS_KEY, stats: c.stats });
      for (const t of turns)
        items.push({ account: r.account, day: t.started_at.slice(0, 10), template: CONVERSATIONS_KEY, stats: t.stats });
    }
    sendJson(r.res, 200, usageReport([r.account], items));
  });
}
