// A fake Anthropic Messages API on 127.0.0.1 for driving the real Claude Code CLI in tests.
// Each POST /v1/messages takes the next scripted turn and answers it as the real API does (SSE
// with message_start, content blocks, message_delta carrying the usage, message_stop), so Claude
// Code runs its real loop: tool calls execute for real and come back as tool_result. The server
// answers from the test process's event loop: start claude (or atlas) asynchronously, never
// with spawnSync/execFileSync, or both wait on each other until the timeout.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';

export interface FakeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export interface FakeToolUse {
  /** Default: a fresh toolu_ id. */
  id?: string;
  name: string;
  input: Record<string, unknown>;
}

export interface FakeTurn {
  /** Assistant text, sent before any tool use. */
  text?: string;
  toolUses?: FakeToolUse[];
  /** Default: 10 in, 5 out, no cache. */
  usage?: FakeUsage;
  /** Default: tool_use when there are tool uses, else end_turn. */
  stopReason?: string;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Send message_start and the text, then never finish (for kills mid-stream). */
  hang?: boolean;
  /** Answer with this HTTP error instead (e.g. 400 invalid_request_error). */
  error?: { status: number; type: string; message: string };
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  /** The parsed JSON body (undefined for bodies that are not JSON). */
  body: any;
}

export interface FakeAnthropic {
  url: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** Requests to POST /v1/messages only. */
  messageRequests(): RecordedRequest[];
  /** Every text the model was sent (system prompt and message contents), for asserting context. */
  allPromptText(): string;
  /** How many scripted turns have been served. */
  served(): number;
  /** Every answer sent whole (not an error, not cut off), with its message id: what the API delivered. */
  delivered(): (FakeUsage & { id: string })[];
  close(): Promise<void>;
}

export type Script = FakeTurn[] | ((request: RecordedRequest, index: number) => FakeTurn);

const DEFAULT_USAGE: FakeUsage = { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
/** Served when a list script has run out: the agent then ends its turn. */
const FINAL_TURN: FakeTurn = { text: 'Done.' };

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(textOf).join('\n');
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return [o['text'], o['content'], o['system']].map(textOf).filter(Boolean).join('\n');
  }
  return '';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolveBody(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function usageOf(turn: FakeTurn): Required<FakeUsage> {
  const u = { ...DEFAULT_USAGE, ...turn.usage };
  return {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cache_read_input_tokens: u.cache_read_input_tokens ?? 0,
    cache_creation_input_tokens: u.cache_creation_input_tokens ?? 0,
  };
}

function streamTurn(res: ServerResponse, turn: FakeTurn, model: string, messageId: string): void {
  const usage = usageOf(turn);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_${messageId}` });
  const event = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', {
    message: {
      id: messageId,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // As the real API: the input side is final at message_start; output grows in message_delta.
      usage: { ...usage, output_tokens: 1 },
    },
  });
  let index = 0;
  if (turn.text !== undefined) {
    event('content_block_start', { index, content_block: { type: 'text', text: '' } });
    event('content_block_delta', { index, delta: { type: 'text_delta', text: turn.text } });
    event('content_block_stop', { index });
    index++;
  }
  if (turn.hang) return; // the connection stays open until the client goes away
  for (const tool of turn.toolUses ?? []) {
    const id = tool.id ?? `toolu_${randomBytes(12).toString('hex')}`;
    event('content_block_start', { index, content_block: { type: 'tool_use', id, name: tool.name, input: {} } });
    event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(tool.input) } });
    event('content_block_stop', { index });
    index++;
  }
  const stopReason = turn.stopReason ?? (turn.toolUses?.length ? 'tool_use' : 'end_turn');
  event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  event('message_stop', {});
  res.end();
}

function answerPlain(res: ServerResponse, turn: FakeTurn, model: string, messageId: string): void {
  const content: unknown[] = [];
  if (turn.text !== undefined) content.push({ type: 'text', text: turn.text });
  for (const tool of turn.toolUses ?? [])
    content.push({ type: 'tool_use', id: tool.id ?? `toolu_${randomBytes(12).toString('hex')}`, name: tool.name, input: tool.input });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: messageId,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: turn.stopReason ?? (turn.toolUses?.length ? 'tool_use' : 'end_turn'),
      stop_sequence: null,
      usage: usageOf(turn),
    }),
  );
}

/** Starts the fake API on 127.0.0.1 (a free port). Stop it with close() in afterAll/afterEach. */
export async function startFakeAnthropic(script: Script = []): Promise<FakeAnthropic> {
  const requests: RecordedRequest[] = [];
  const open = new Set<ServerResponse>();
  const delivered: (FakeUsage & { id: string })[] = [];
  let served = 0;

  const nextTurn = (request: RecordedRequest): FakeTurn => {
    const index = served++;
    if (typeof script === 'function') return script(request, index);
    return script[index] ?? FINAL_TURN;
  };

  const server: Server = createServer(async (req, res) => {
    const raw = await readBody(req).catch(() => '');
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const recorded: RecordedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body };
    requests.push(recorded);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: Math.max(1, Math.ceil(raw.length / 4)) }));
      return;
    }
    if (req.method === 'POST' && path === '/v1/messages') {
      const turn = nextTurn(recorded);
      const model = typeof body?.model === 'string' ? body.model : 'claude-test';
      const messageId = `msg_${randomBytes(10).toString('hex')}`;
      const answer = () => {
        if (!turn.error && !turn.hang) res.once('finish', () => delivered.push({ ...DEFAULT_USAGE, ...turn.usage, id: messageId }));
        if (turn.error) {
          res.writeHead(turn.error.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ type: 'error', error: { type: turn.error.type, message: turn.error.message } }));
        } else if (body?.stream) {
          open.add(res);
          res.on('close', () => open.delete(res));
          streamTurn(res, turn, model, messageId);
        } else {
          answerPlain(res, turn, model, messageId);
        }
      };
      if (turn.delayMs) setTimeout(answer, turn.delayMs).unref();
      else answer();
      return;
    }
    // Claude Code probes the base URL (HEAD /) before its first request.
    res.writeHead(req.method === 'HEAD' || path === '/' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(req.method === 'HEAD' ? undefined : '{}');
  });
  await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    messageRequests: () => requests.filter((r) => r.method === 'POST' && r.url.split('?')[0] === '/v1/messages'),
    allPromptText: () =>
      requests
        .filter((r) => r.body)
        .map((r) => [textOf(r.body.system), textOf(r.body.messages)].join('\n'))
        .join('\n'),
    served: () => served,
    delivered: () => delivered,
    close: async () => {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
    },
  };
}

const REPO_ROOT = resolve(import.meta.dirname, '../..');
/** The real Claude Code CLI of the dev dependency. */
export const CLAUDE_BIN_DIR = join(REPO_ROOT, 'node_modules', '.bin');

/**
 * Environment for running the real `claude` against the fake API: its own config folder (the
 * real ~/.claude is never touched), a dummy key made now, no non-essential traffic, and the dev
 * dependency's `claude` first on PATH.
 */
export function claudeEnv(fake: Pick<FakeAnthropic, 'url'>, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const configDir = realpathSync(mkdtempSync(join(tmpdir(), 'atlas-claude-config-')));
  return {
    ...base,
    PATH: [CLAUDE_BIN_DIR, base['PATH'] ?? ''].join(delimiter),
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_API_KEY: `sk-ant-test-${randomBytes(8).toString('hex')}`,
    CLAUDE_CONFIG_DIR: configDir,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
  };
}
