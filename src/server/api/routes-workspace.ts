// Routes beyond one conversation's turn: the account-wide event stream, and the workspace over
// the API (files of a conversation's workspace or a task's worktree, a task's diff).

import { readTask } from '../../store/task-store.js';
import { conversationFiles } from '../conversations/conversation-store.js';
import type { Conversations } from '../conversations/conversations.js';
import type { ServerContext } from '../http/context.js';
import { HttpError, sendJson } from '../http/http.js';
import type { Router } from '../http/router.js';
import { pipeLog, SseClient } from '../http/sse.js';
import type { AccountEvents } from '../state/account-events.js';
import { taskDiff } from '../tasks/task-diff.js';
import type { Tasks } from '../tasks/tasks.js';
import { serveWorkspacePath } from '../tasks/workspace-files.js';
import type { Handler } from './request.js';
import { eventPage, lastEventId, wantsJson } from './request.js';

export function addWorkspaceRoutes(
  router: Router<Handler>,
  ctx: ServerContext,
  conversations: Conversations,
  tasks: Tasks,
  accountEvents: AccountEvents | undefined,
): void {
  router.add('GET', '/events', async (r) => {
    if (!accountEvents) throw new HttpError(404, 'not_found', 'no account event stream on this server');
    const log = accountEvents.logOf(r.account);
    const after = lastEventId(r);
    if (wantsJson(r)) return eventPage(r, log, after);
    const release = ctx.streams.acquire(r.account);
    const client = new SseClient(r.res, { bufferLimit: ctx.config.server.client_buffer, heartbeatMs: ctx.config.server.sse_heartbeat });
    client.open({ 'x-request-id': r.requestId });
    r.started();
    client.onClose(release);
    // A dashboard's stream: it never ends by itself.
    pipeLog(
      client,
      log,
      after,
      () => false,
      () => false,
    );
  });

  router.add('GET', '/conversations/:id/files', async (r) => {
    const c = await conversations.detect(r.account, r.params['id']!);
    if (!c) throw new HttpError(404, 'not_found', `no conversation ${r.params['id']}`);
    await serveWorkspacePath(r.res, conversationFiles(ctx.home, r.account, c.id).workspace, r.url.searchParams.get('path'));
  });

  router.add('GET', '/tasks/:id/files', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    await serveWorkspacePath(r.res, readTask(record.dir).worktree, r.url.searchParams.get('path'));
  });

  router.add('GET', '/tasks/:id/diff', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    sendJson(r.res, 200, await taskDiff(record.dir));
  });
}
