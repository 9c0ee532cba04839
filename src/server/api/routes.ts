// Every route of the API (docs/server.md). Handlers get the authenticated account; everything they
// read is looked up under that account, so another account's ids answer 404.
import { readFileSync } from 'node:fs';
import { HOOK_STATES } from '../../domain/hook-state.js';
import { readHookFile } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import { PROVIDERS, SERVER_CONVERSATION_STATUSES } from '../conversations/conversation-store.js';
import type { Conversations, StartedTurn } from '../conversations/conversations.js';
import { conversationMessages } from '../conversations/messages.js';
import type { ServerContext } from '../http/context.js';
import {
  HttpError,
  optionalBoolean,
  optionalEnum,
  optionalString,
  PATH_ID,
  readJsonObject,
  requiredString,
  sendJson,
} from '../http/http.js';
import { itemFilter, matches, numberKey, pageRequest, paginate } from '../http/pagination.js';
import { Router } from '../http/router.js';
import { pipeLog, SseClient } from '../http/sse.js';
import type { AccountEvents } from '../state/account-events.js';
import type { EventLog, StoredEvent } from '../state/event-log.js';
import type { Tasks } from '../tasks/tasks.js';
import { RECOVER_ACTIONS, TASK_ACTIONS } from '../tasks/tasks.js';
import { addBoardRoutes } from './board-routes.js';
import type { Handler, RequestInfo } from './request.js';
import { eventPage, lastEventId, wantsJson } from './request.js';
import { addTaskReadRoutes } from './routes-task-reads.js';
import { addWorkspaceRoutes } from './routes-workspace.js';

const MAX_PROMPT = 500_000;

/** Aborts when the client closes its connection before the answer is complete. */
function clientGone(r: RequestInfo): AbortSignal {
  const controller = new AbortController();
  // 'close' comes after every answer too: aborting then would tell nobody anything, and cost an
  // exception object (its stack) per request.
  r.res.once('close', () => (r.res.writableFinished ? undefined : controller.abort()));
  return controller.signal;
}

export function buildRoutes(
  ctx: ServerContext,
  conversations: Conversations,
  tasks: Tasks,
  accountEvents?: AccountEvents,
): Router<Handler> {
  const limit = ctx.config.server.max_body;
  const sseOptions = { bufferLimit: ctx.config.server.client_buffer, heartbeatMs: ctx.config.server.sse_heartbeat };

  /** Opens an SSE stream counted against the account's limit. */
  const stream = (
    r: RequestInfo,
    release: () => void,
    log: EventLog,
    afterId: number,
    isLast: (e: StoredEvent) => boolean,
    idle: () => boolean,
    remote = false,
  ) => {
    const client = new SseClient(r.res, sseOptions);
    client.open({ 'x-request-id': r.requestId });
    r.started();
    client.onClose(() => {
      release();
      if (client.endReason !== 'done')
        ctx.log({ msg: 'stream closed', request_id: r.requestId, account: r.account, reason: client.endReason });
    });
    pipeLog(client, log, afterId, isLast, idle, remote);
  };

  // A turn's stream ends with its usage, or with `interrupted` when another server took it over.
  const streamTurn = (r: RequestInfo, release: () => void, turn: StartedTurn) =>
    stream(
      r,
      release,
      turn.log,
      turn.fromId,
      (e) => (e.type === 'usage' || e.type === 'interrupted') && e.id > turn.fromId,
      () => false,
    );

  const router = new Router<Handler>();

  router.add('POST', '/conversations/:conversationId/sandbox/:sandboxId', async (r) => {
    const body = await readJsonObject(r.req, limit);
    const prompt = requiredString(body, 'prompt', MAX_PROMPT);
    const provider = optionalEnum(body, 'provider', PROVIDERS);
    const agentId = optionalString(body, 'agent_id', 200);
    // The stream counts once the turn is past the account's queue: a queued request holds none,
    // so the queue (server.max_queued_per_account) can fill before the stream limit refuses.
    let release: () => void = () => {};
    const admitted = () => {
      release = ctx.streams.acquire(r.account);
    };
    let turn: StartedTurn;
    try {
      turn = await conversations.startTurn({
        account: r.account,
        conversationId: r.params['conversationId']!,
        sandboxId: r.params['sandboxId']!,
        prompt,
        provider,
        agentId,
        aborted: clientGone(r),
        admitted,
      });
    } catch (error) {
      release();
      throw error;
    }
    streamTurn(r, release, turn);
  });

  router.add('POST', '/conversations/:conversationId/recover', async (r) => {
    await readJsonObject(r.req, limit);
    const release = ctx.streams.acquire(r.account);
    let turn: StartedTurn;
    try {
      turn = await conversations.recover(r.account, r.params['conversationId']!, clientGone(r));
    } catch (error) {
      release();
      throw error;
    }
    streamTurn(r, release, turn);
  });

  router.add('POST', '/conversations/:conversationId/cancel', async (r) => {
    await readJsonObject(r.req, limit);
    const conversation = await conversations.cancel(r.account, r.params['conversationId']!);
    sendJson(r.res, 200, { conversation });
  });

  router.add('GET', '/conversations', async (r) => {
    const filter = itemFilter(r.url, SERVER_CONVERSATION_STATUSES);
    const all = (await conversations.list(r.account)).filter((c) => matches(filter, c.status, c.updated_at));
    // By creation, a key that never changes: a conversation that gets a turn while a client pages
    // keeps its place (by its last update it jumped ahead of the cursor and was never listed).
    const page = paginate(all, pageRequest(r.url), (c) => [c.created_at, c.id], ['desc', 'asc']);
    sendJson(r.res, 200, { conversations: page.items, next_cursor: page.next_cursor });
  });

  const conversation = async (r: RequestInfo) => {
    const c = await conversations.detect(r.account, r.params['id']!);
    if (!c) throw new HttpError(404, 'not_found', `no conversation ${r.params['id']}`);
    return c;
  };

  router.add('GET', '/conversations/:id', async (r) => {
    sendJson(r.res, 200, { conversation: await conversation(r), running: conversations.isRunning(r.account, r.params['id']!) });
  });

  router.add('GET', '/conversations/:id/messages', async (r) => {
    const c = await conversation(r);
    const request = pageRequest(r.url);
    // Messages only ever get appended: the position is a stable key.
    const indexed = (await conversationMessages(await ctx.state(), ctx.home, r.account, c.id)).map((m, i) => ({ m, k: numberKey(i) }));
    const page = paginate(indexed, request, (e) => [e.k], ['asc']);
    sendJson(r.res, 200, { conversation_id: c.id, messages: page.items.map((e) => e.m), next_cursor: page.next_cursor });
  });

  router.add('GET', '/conversations/:id/events', async (r) => {
    const c = await conversation(r);
    const after = lastEventId(r);
    if (wantsJson(r)) return eventPage(r, conversations.logOf(r.account, c.id), after);
    const release = ctx.streams.acquire(r.account);
    const log = conversations.logOf(r.account, c.id);
    if (c.status === 'running' && !conversations.isRunning(r.account, c.id)) {
      // The turn runs on another server on this state (its lease lasts): its events are read from
      // the state as they come, until its usage, or until a server finds it cut off.
      const ends = (e: StoredEvent) => (e.type === 'usage' || e.type === 'interrupted') && e.data['turn'] === c.turns;
      return stream(r, release, log, after, ends, () => false, true);
    }
    const idle = () => !conversations.isRunning(r.account, c.id);
    // Ends with the running turn's usage event (or `interrupted`, when another server took the
    // turn over), or after the replay when no turn runs.
    stream(r, release, log, after, (e) => (e.type === 'usage' || e.type === 'interrupted') && idle() && e.id >= log.lastId, idle);
  });

  router.add('DELETE', '/conversations/:id', async (r) => {
    const terminateParam = r.url.searchParams.get('terminate');
    const body = await readJsonObject(r.req, limit);
    const fromBody = optionalBoolean(body, 'terminate');
    if (terminateParam !== null && terminateParam !== 'true' && terminateParam !== 'false') {
      throw new HttpError(400, 'invalid_field', 'terminate: must be true or false', { field: 'terminate' });
    }
    const terminate = fromBody ?? (terminateParam === null ? ctx.config.server.terminate_on_delete : terminateParam === 'true');
    await conversations.remove(r.account, r.params['id']!, terminate);
    sendJson(r.res, 200, { deleted: r.params['id'], terminated: terminate });
  });

  router.add('POST', '/tasks', async (r) => {
    const body = await readJsonObject(r.req, limit);
    const repo = requiredString(body, 'repo', 4096);
    const template = requiredString(body, 'template', 200);
    if (!PATH_ID.test(template))
      throw new HttpError(400, 'invalid_field', 'template: letters, digits, "-" and "_" only', { field: 'template' });
    const description = optionalString(body, 'description', 10_000) ?? '';
    const mode = optionalEnum(body, 'mode', ['local', 'sandbox'] as const);
    // Unsandboxed only where the operator already allows it: a caller may tighten, never loosen.
    if (mode === 'local' && !ctx.local && ctx.config.execution.mode !== 'local')
      throw new HttpError(
        403,
        'local_refused',
        'mode: this server runs task steps in the sandbox; it does not let a caller run them unsandboxed',
        { field: 'mode' },
      );
    const { record, summary } = await tasks.create(r.account, repo, template, description, clientGone(r), mode);
    sendJson(r.res, 202, { task: summary, events: `/tasks/${record.task_id}/events` });
  });

  router.add('GET', '/tasks', async (r) => {
    const filter = itemFilter(r.url, HOOK_STATES);
    const all = (await tasks.list(r.account)).filter((t) => matches(filter, t.state, t.updated_at));
    const page = paginate(all, pageRequest(r.url), (t) => [t.created_at, t.id], ['desc', 'asc']);
    sendJson(r.res, 200, { tasks: page.items, next_cursor: page.next_cursor });
  });

  router.add('GET', '/tasks/:id', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    sendJson(r.res, 200, {
      task: tasks.summary(record),
      running: tasks.isRunning(record.task_id),
      hook: readHookFile(taskFiles(record.dir).hook),
    });
  });

  router.add('GET', '/tasks/:id/events', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    const after = lastEventId(r);
    if (wantsJson(r)) return eventPage(r, tasks.logOf(record), after);
    const release = ctx.streams.acquire(r.account);
    const idle = () => !tasks.isLive(record.task_id);
    const log = tasks.logOf(record);
    stream(r, release, log, after, (e) => e.type === 'finished' && idle() && e.id >= log.lastId, idle);
  });

  for (const action of TASK_ACTIONS) {
    router.add('POST', `/tasks/:id/${action}`, async (r) => {
      const body = await readJsonObject(r.req, limit);
      const note = optionalString(body, action === 'checkpoint' ? 'description' : 'note', 2000);
      const recoverAction = action === 'recover' ? optionalEnum(body, 'action', RECOVER_ACTIONS) : undefined;
      const { status, body: out } = await tasks.action(r.account, r.params['id']!, action, note, recoverAction);
      sendJson(r.res, status, out);
    });
  }

  addWorkspaceRoutes(router, ctx, conversations, tasks, accountEvents);
  addTaskReadRoutes(router, ctx.home, conversations, tasks);
  addBoardRoutes(router, ctx, tasks);
  router.add('GET', '/tasks/:id/verify', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    const { verifyTask } = await import('../tasks/task-verify.js');
    sendJson(r.res, 200, await verifyTask(ctx.home, ctx.config, record.dir));
  });
  // HOOK.md as the CLI writes it (the hook as Markdown), for the board to show as text.
  router.add('GET', '/tasks/:id/hook.md', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    let text: string;
    try {
      text = readFileSync(taskFiles(record.dir).hookMarkdown, 'utf8');
    } catch {
      throw new HttpError(404, 'not_found', `task ${record.task_id} has no HOOK.md yet`);
    }
    r.res.writeHead(200, {
      'content-type': 'text/markdown; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    r.res.end(text);
  });
  return router;
}
