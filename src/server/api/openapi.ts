// The API's description, OpenAPI 3.1, served at GET /openapi.json. Written by hand next to the
// routes; a test checks that every route of the router is here and docs/server.md names each one,
// and the server tests validate every answer they get against it.
import { HOOK_STATES } from '../../domain/hook-state.js';
import { SERVER_CONVERSATION_STATUSES } from '../conversations/conversation-store.js';
import { SCHEMAS } from './openapi-schemas.js';

/** A required text field as the server takes it: something besides white space, and no NUL. */
const TEXT = { type: 'string', minLength: 1, pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$' };

type Json = Record<string, unknown>;

const ref = (name: keyof typeof SCHEMAS) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: keyof typeof SCHEMAS, description: string) => ({ description, content: { 'application/json': { schema: ref(name) } } });
const sse = (description: string) => ({ description, content: { 'text/event-stream': { schema: { type: 'string' } } } });
const errors = { default: json('Error', 'an error: a stable code, a message and the request id (429 and 503 carry Retry-After)') };
const idParam = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$' },
});
const query = (name: string, description: string, schema: Json = { type: 'string' }) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
const page = [
  query('limit', 'at most this many items (1..1000, default 100)', { type: 'integer', minimum: 1, maximum: 1000 }),
  query('cursor', 'next_cursor of the previous page'),
];
const times = [
  query('since', 'only items updated at or after this time', { type: 'string', format: 'date-time' }),
  query('until', 'only items updated before this time', { type: 'string', format: 'date-time' }),
];
const lastEventId = [
  {
    name: 'Last-Event-ID',
    in: 'header',
    required: false,
    description: 'resume after this event id',
    schema: { type: 'string', pattern: '^\\d{1,15}$' },
  },
  query('last_event_id', 'the same as the Last-Event-ID header (for clients that cannot set headers)'),
];
const jsonBody = (properties: Json, required: string[] = []) => ({
  required: false,
  content: { 'application/json': { schema: { type: 'object', required, properties } } },
});
const conv = idParam('id', 'the conversation id');
const task = { name: 'id', in: 'path', required: true, description: 'the task id', schema: { type: 'string' } };

function op(summary: string, responses: Json, extra: Json = {}): Json {
  return { summary, ...extra, responses: { ...responses, ...errors } };
}

const taskAction = (action: string, summary: string): Json => ({
  post: op(
    summary,
    { '200': json('TaskActionResult', 'done'), '202': json('TaskActionResult', 'started: follow the events') },
    {
      operationId: `${action}Task`,
      parameters: [task],
      requestBody: jsonBody({
        note: { type: 'string', maxLength: 2000 },
        description: { type: 'string', maxLength: 2000 },
        action: { enum: ['retry_step', 'retry_from_checkpoint', 'skip_step'] },
      }),
    },
  ),
});

// biome-ignore format: a table of the API, one route a line, read down the paths.
export const OPENAPI_PATHS: Record<string, Json> = {
  '/health': { get: op('liveness: the process answers', { '200': json('Health', 'alive'), '503': json('Health', 'stopping') }, { operationId: 'health', security: [] }) },
  '/ready': { get: op('readiness: sandbox, store and state reachable', { '200': json('Ready', 'ready for work'), '503': json('Ready', 'starting, stopping, or a check failed (see checks)') }, { operationId: 'ready', security: [] }) },
  '/metrics': { get: op('Prometheus metrics', { '200': { description: 'text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } } }, { operationId: 'metrics', security: [] }) },
  '/openapi.json': { get: op('this document', { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } }, { operationId: 'openapi', security: [] }) },
  '/events': { get: op('every event of the account\'s conversations and tasks, live (SSE, resumable), or a page of them (Accept: application/json)', { '200': { description: 'the stream or a page', content: { 'text/event-stream': { schema: { type: 'string' } }, 'application/json': { schema: ref('EventPage') } } } }, { operationId: 'accountEvents', parameters: [...lastEventId, page[0]] }) },
  '/conversations': { get: op('the account\'s conversations, newest first', { '200': json('ConversationPage', 'a page') }, { operationId: 'listConversations', parameters: [...page, query('state', 'only conversations in this state', { enum: [...SERVER_CONVERSATION_STATUSES] }), ...times] }) },
  '/conversations/{conversationId}/sandbox/{sandboxId}': {
    post: op('send a prompt: the turn streams back as SSE', { '200': sse('the turn: message, tool and usage events') }, {
      operationId: 'prompt',
      parameters: [idParam('conversationId', 'the conversation (made on first use)'), idParam('sandboxId', 'its sandbox')],
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['prompt'], properties: { prompt: { ...TEXT, maxLength: 500000 }, provider: { enum: ['claude', 'command'] }, agent_id: { type: 'string', maxLength: 200 } } } } } },
    }),
  },
  '/conversations/{id}': {
    get: op('one conversation', { '200': json('ConversationDetail', 'the conversation') }, { operationId: 'getConversation', parameters: [conv] }),
    delete: op('delete a conversation (and terminate its sandbox)', { '200': json('Deleted', 'deleted') }, { operationId: 'deleteConversation', parameters: [conv, query('terminate', 'also remove the sandbox workspace', { enum: ['true', 'false'] })], requestBody: jsonBody({ terminate: { type: 'boolean' } }) }),
  },
  '/conversations/{id}/messages': { get: op('the conversation\'s messages, oldest first', { '200': json('MessagePage', 'a page') }, { operationId: 'listMessages', parameters: [conv, ...page] }) },
  '/conversations/{id}/events': { get: op('the conversation\'s events (SSE, replayed after Last-Event-ID), or a page of them (Accept: application/json)', { '200': { description: 'the stream or a page', content: { 'text/event-stream': { schema: { type: 'string' } }, 'application/json': { schema: ref('EventPage') } } } }, { operationId: 'conversationEvents', parameters: [conv, ...lastEventId, page[0]] }) },
  '/conversations/{id}/recover': { post: op('continue an interrupted turn (SSE)', { '200': sse('the recovery turn') }, { operationId: 'recoverConversation', parameters: [conv], requestBody: jsonBody({}) }) },
  '/conversations/{id}/cancel': { post: op('cancel the running turn: the agent stops, the workspace is checkpointed and pushed, the turn ends with a cancelled event', { '200': { description: 'cancelled: the turn has ended', content: { 'application/json': { schema: { type: 'object', required: ['conversation'], properties: { conversation: ref('Conversation') } } } } } }, { operationId: 'cancelConversation', parameters: [conv], requestBody: jsonBody({}) }) },
  '/conversations/{id}/files': { get: op('a file or folder of the conversation\'s workspace', { '200': { description: 'a folder listing (JSON) or the file\'s bytes', content: { 'application/json': { schema: ref('FileListing') }, 'application/octet-stream': { schema: { type: 'string' } } } } }, { operationId: 'conversationFiles', parameters: [conv, query('path', 'relative to the workspace; no "..", no symbolic links followed')] }) },
  '/tasks': {
    get: op('the account\'s tasks, newest first', { '200': json('TaskPage', 'a page') }, { operationId: 'listTasks', parameters: [...page, query('state', 'only tasks in this hook state', { enum: [...HOOK_STATES] }), ...times] }),
    post: op('start a task', { '202': json('TaskCreated', 'started: follow the events') }, {
      operationId: 'createTask',
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['repo', 'template'], properties: { repo: { ...TEXT, maxLength: 4096 }, template: { type: 'string', pattern: '^[A-Za-z0-9_-]+$', maxLength: 200 }, description: { type: 'string', pattern: '^[^\\u0000]*$', maxLength: 10000 }, mode: { enum: ['local', 'sandbox'], description: 'execution mode of its steps; local only where the server already runs unsandboxed' } } } } } },
    }),
  },
  '/tasks/{id}': { get: op('one task with its hook', { '200': json('TaskDetail', 'the task') }, { operationId: 'getTask', parameters: [task] }) },
  '/tasks/{id}/events': { get: op('the task\'s events (SSE, replayed after Last-Event-ID), or a page of them (Accept: application/json)', { '200': { description: 'the stream or a page', content: { 'text/event-stream': { schema: { type: 'string' } }, 'application/json': { schema: ref('EventPage') } } } }, { operationId: 'taskEvents', parameters: [task, ...lastEventId, page[0]] }) },
  '/tasks/{id}/files': { get: op('a file or folder of the task\'s worktree', { '200': { description: 'a folder listing (JSON) or the file\'s bytes', content: { 'application/json': { schema: ref('FileListing') }, 'application/octet-stream': { schema: { type: 'string' } } } } }, { operationId: 'taskFiles', parameters: [task, query('path', 'relative to the worktree; no "..", no symbolic links followed')] }) },
  '/tasks/{id}/diff': { get: op('the worktree\'s changes against the task\'s base commit', { '200': json('Diff', 'a unified diff') }, { operationId: 'taskDiff', parameters: [task] }) },
  '/tasks/{id}/verify': { get: op('the task\'s receipts verified with this server\'s account public key, as atlas verify does', { '200': json('TaskVerification', 'each receipt valid or not, and why') }, { operationId: 'verifyTask', parameters: [task] }) },
  '/tasks/{id}/hook.md': { get: op('the task\'s HOOK.md (its hook as Markdown, written by atlas)', { '200': { description: 'Markdown text', content: { 'text/markdown': { schema: { type: 'string' } } } } }, { operationId: 'taskHookMarkdown', parameters: [task] }) },
  '/tasks/{id}/conversations': { get: op('the agent runs the task recorded (its conversations, oldest first) and its ledger\'s totals', { '200': json('TaskConversations', 'the runs and the totals') }, { operationId: 'taskConversations', parameters: [task] }) },
  '/tasks/{id}/conversations/{conversationId}/messages': { get: op('one run\'s messages and tool calls, oldest first', { '200': json('MessagePage', 'a page') }, { operationId: 'taskConversationMessages', parameters: [task, idParam('conversationId', 'the run (conv- and 12 hex digits)'), ...page] }) },
  '/usage': { get: op('tokens and cost per day, per template and per account: the account\'s task runs and conversations', { '200': json('Usage', 'the figures') }, { operationId: 'usage' }) },
  '/tasks/{id}/checkpoint': taskAction('checkpoint', 'checkpoint the task now'),
  '/tasks/{id}/recover': taskAction('recover', 'recover a crashed or interrupted task'),
  '/tasks/{id}/approve': taskAction('approve', 'approve the step waiting for a person'),
  '/tasks/{id}/reject': taskAction('reject', 'reject the step waiting for a person'),
  '/tasks/{id}/retry': taskAction('retry', 'run a failed step that waits for a person again, with the note in the agent\'s prompt (atlas resume --note)'),
  '/tasks/{id}/diagnosis': { get: op('for the board: a stopped task\'s diagnosis and every recovery action with what it does, why a failed task failed, the prompt a waiting step shows', { '200': { description: 'each null when it does not apply', content: { 'application/json': { schema: { type: 'object', required: ['task_id', 'recovery', 'failure', 'prompt'], properties: { task_id: { type: 'string' }, recovery: { type: ['object', 'null'] }, failure: { type: ['object', 'null'] }, prompt: { type: ['string', 'null'] } } } } } } }, { operationId: 'taskDiagnosis', parameters: [task] }) },
  '/tasks/{id}/artifact': { get: op('one artifact a step wrote (a command\'s output), as plain text', { '200': { description: 'the text (first 256 KiB)', content: { 'text/plain': { schema: { type: 'string' } } } } }, { operationId: 'taskArtifact', parameters: [task, query('path', 'artifacts/<step>/<file>, as the hook records it')] }) },
  '/board/cards': { get: op('for the board: per task, when its current step started and its last output line', { '200': { description: 'the cards', content: { 'application/json': { schema: { type: 'object', required: ['cards'], properties: { cards: { type: 'array', items: { type: 'object', required: ['id', 'step_started_at', 'last_line'], properties: { id: { type: 'string' }, step_started_at: { type: ['string', 'null'] }, last_line: { type: 'string' } } } } } } } } } }, { operationId: 'boardCards' }) },
  '/board/repos': { get: op('for the board: the repositories under server.repos_root and the templates each offers', { '200': { description: 'the repositories', content: { 'application/json': { schema: { type: 'object', required: ['repos'], properties: { repos: { type: 'array', items: { type: 'object', required: ['name', 'templates'], properties: { name: { type: 'string' }, templates: { type: 'array', items: { type: 'string' } } } } }, mode: { enum: ['local', 'sandbox'] }, modes: { type: 'array', items: { enum: ['local', 'sandbox'] } }, hint: { type: 'string' } } } } } } }, { operationId: 'boardRepos' }) },
  '/tasks/{id}/abandon': taskAction('abandon', 'abandon the task'),
  '/tasks/{id}/cancel': taskAction('cancel', 'cancel the running task command: it stops and is checkpointed'),
  // The web board (docs/ui.md): its page, its assets and its cookie sign-in.
  '/': { get: op('the web board\'s page (HTML, strict Content-Security-Policy)', { '200': { description: 'the page', content: { 'text/html': { schema: { type: 'string' } } } } }, { operationId: 'board', security: [] }) },
  '/ui/login': { get: op('`atlas ui` only: exchange the one-time code of the printed link for the session cookie', { '303': { description: 'signed in: to the board', content: { 'text/plain': { schema: { type: 'string' } } } }, '401': { description: 'the link is not valid or was used: a page saying to restart `atlas ui`', content: { 'text/html': { schema: { type: 'string' } } } } }, { operationId: 'boardLogin', security: [], parameters: [query('code', 'the one-time code')] }) },
  '/ui/{file}': { get: op('a file of the board\'s bundle (hashed name, cached for a year)', { '200': { description: 'the file', content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } } } }, { operationId: 'boardAsset', security: [], parameters: [{ name: 'file', in: 'path', required: true, schema: { type: 'string' } }] }) },
  '/session': {
    post: op('sign the board in: the token becomes an HttpOnly, SameSite=Strict session cookie (and a readable CSRF cookie)', { '200': json('Session', 'signed in') }, { operationId: 'signIn', security: [], requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['token'], properties: { token: { type: 'string', maxLength: 200 } } } } } } }),
    get: op('the signed-in session: account and CSRF token (cookie)', { '200': json('Session', 'signed in') }, { operationId: 'getSession', security: [{ cookie: [] }] }),
    delete: op('sign out (needs the x-csrf-token header)', { '200': { description: 'signed out', content: { 'application/json': { schema: { type: 'object', required: ['signed_out'], properties: { signed_out: { type: 'boolean' } } } } } } }, { operationId: 'signOut', security: [{ cookie: [] }] }),
  },
};

export function openApiDocument(version: string): Json {
  return {
    openapi: '3.1.0',
    info: {
      title: 'atlas serve',
      version,
      description: 'Conversations with an agent and atlas tasks over HTTP, per account (docs/server.md).',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ bearer: [] }, { cookie: [] }],
    paths: OPENAPI_PATHS,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        cookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'atlas_session',
          description: "the board's session (docs/ui.md); requests that change something also need the x-csrf-token header",
        },
      },
      schemas: SCHEMAS,
    },
  };
}
