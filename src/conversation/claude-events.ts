// Claude Code's stream-json events → seed 000 Messages and ledger figures. Claude Code prints one
// `assistant` event per content block, each repeating its API message (same id, same usage), so
// blocks are gathered into one Message until an event of another message arrives; the usage of
// each message id is counted once. `user` events carry the tool results, each becoming a role 3
// message that names its tool_use id (the recorder joins it into the assistant message).

import { parseModelUsage, parsePermissionDenials } from '../agent/claude-result.js';
import { parseUsage } from '../agent/claude-stream.js';
import type { Message, ModelUsageRow, PermissionDenial, ToolCall } from '../domain/conversation.js';
import { MESSAGE_ROLE } from '../domain/conversation.js';
import type { CallUsage, ResultFigures } from './ledger.js';

type Obj = Record<string, unknown>;

/** Longest tool output kept in a message (the agent's own transcript has the rest). */
export const MAX_TOOL_OUTPUT = 64 * 1024;

export interface ClaudeEventSink {
  message(message: Message): void;
  call(messageId: string, usage: CallUsage, model: string): void;
  session(sessionId: string, model: string): void;
  result(figures: ResultFigures | undefined, denials: PermissionDenial[]): void;
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}

function clip(text: string): string {
  if (text.length <= MAX_TOOL_OUTPUT) return text;
  return `${text.slice(0, MAX_TOOL_OUTPUT)}\n… (${text.length - MAX_TOOL_OUTPUT} more characters not kept)`;
}

/** A tool_result's content: a string, or blocks of text (images are named, not kept). */
function toolOutput(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isObj)
    .map((b) => (b['type'] === 'text' ? str(b['text']) : `[${str(b['type']) || 'content'}]`))
    .join('\n');
}

export function callUsage(usage: unknown): CallUsage | undefined {
  const u = parseUsage(usage);
  if (!u) return undefined;
  return {
    input_tokens: count(u.input_tokens),
    cache_read_tokens: count(u.cache_read_input_tokens),
    cache_creation_tokens: count(u.cache_creation_input_tokens),
  };
}

export function resultFigures(event: Obj): ResultFigures | undefined {
  const input = callUsage(event['usage']);
  if (!input) return undefined;
  const cost = event['total_cost_usd'] ?? event['cost_usd'];
  const models: ModelUsageRow[] = parseModelUsage(event['modelUsage']);
  return {
    ...input,
    output_tokens: count(parseUsage(event['usage'])?.output_tokens),
    cost_usd: typeof cost === 'number' && Number.isFinite(cost) ? cost : null,
    models,
  };
}

export class ClaudeEventReader {
  private open: Message | undefined;
  /** The API message id of `open`. */
  private openId = '';
  /** API message ids already written, with how many parts: Claude Code may run a tool before it
   * prints the message's next block, whose events then continue a message already closed. */
  private readonly closedParts = new Map<string, number>();
  private readonly toolNames = new Map<string, string>();
  private userCount = 0;

  constructor(
    private readonly conversationId: string,
    private readonly sink: ClaudeEventSink,
    private readonly clock: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  event(event: Obj): void {
    switch (event['type']) {
      case 'system':
        if (event['subtype'] === 'init' || typeof event['session_id'] === 'string') {
          this.sink.session(str(event['session_id']), str(event['model']));
        }
        break;
      case 'assistant':
        this.assistant(event);
        break;
      case 'user':
        this.close();
        this.user(event);
        break;
      case 'result':
        this.close();
        this.sink.result(resultFigures(event), parsePermissionDenials(event['permission_denials']));
        break;
      default:
        break;
    }
  }

  /** The stream ended: the message being gathered is complete. */
  end(): void {
    this.close();
  }

  private close(): void {
    if (!this.open) return;
    const message = this.open;
    this.open = undefined;
    this.closedParts.set(this.openId, (this.closedParts.get(this.openId) ?? 0) + 1);
    this.sink.message(message);
  }

  private assistant(event: Obj): void {
    const m = isObj(event['message']) ? event['message'] : {};
    const id = str(m['id']) || str(event['uuid']) || `assistant-${Date.now()}`;
    if (this.open && this.openId !== id) this.close();
    if (!this.open) {
      const usage = callUsage(m['usage']);
      // The ledger counts each API call once, however many events or parts repeat it.
      if (usage) this.sink.call(id, usage, str(m['model']));
      const parts = this.closedParts.get(id) ?? 0;
      this.openId = id;
      this.open = {
        key: parts === 0 ? id : `${id}.${parts + 1}`,
        conversation_id: this.conversationId,
        body: '',
        role: MESSAGE_ROLE.assistant,
        timestamp: this.clock(),
        tokens: usage && parts === 0 ? usage.input_tokens + usage.cache_read_tokens + usage.cache_creation_tokens : 0,
        tool_calls: [],
      };
    }
    const content = Array.isArray(m['content']) ? m['content'] : [];
    for (const block of content) {
      if (!isObj(block)) continue;
      if (block['type'] === 'text') {
        const text = str(block['text']);
        if (text.length > 0) this.open.body = this.open.body ? `${this.open.body}\n\n${text}` : text;
      } else if (block['type'] === 'tool_use') {
        const id = str(block['id']);
        const name = str(block['name']) || 'tool';
        if (this.open.tool_calls.some((c) => c.id === id)) continue;
        this.toolNames.set(id, name);
        this.open.tool_calls.push({
          id,
          type: 'tool_use',
          name,
          input: isObj(block['input']) ? block['input'] : {},
          output: '',
          status: 'pending',
          error: '',
        });
      }
    }
  }

  private user(event: Obj): void {
    const m = isObj(event['message']) ? event['message'] : {};
    const content = m['content'];
    if (typeof content === 'string') {
      this.userMessage(event, content);
      return;
    }
    if (!Array.isArray(content)) return;
    const texts: string[] = [];
    for (const block of content) {
      if (!isObj(block)) continue;
      if (block['type'] === 'tool_result') {
        const id = str(block['tool_use_id']);
        const output = clip(toolOutput(block['content']));
        const failed = block['is_error'] === true;
        const call: ToolCall = {
          id,
          type: 'tool_result',
          name: this.toolNames.get(id) ?? 'tool',
          input: {},
          output,
          status: failed ? 'error' : 'success',
          error: failed ? output.split('\n')[0]!.slice(0, 500) : '',
        };
        this.sink.message({
          key: `tool-${id}`,
          conversation_id: this.conversationId,
          body: output,
          role: MESSAGE_ROLE.tool,
          timestamp: this.clock(),
          tokens: 0,
          tool_calls: [call],
        });
      } else if (block['type'] === 'text') {
        texts.push(str(block['text']));
      }
    }
    if (texts.length > 0) this.userMessage(event, texts.join('\n'));
  }

  private userMessage(event: Obj, body: string): void {
    this.userCount++;
    this.sink.message({
      key: str(event['uuid']) || `user-${this.userCount}`,
      conversation_id: this.conversationId,
      body,
      role: MESSAGE_ROLE.user,
      timestamp: this.clock(),
      tokens: 0,
      tool_calls: [],
    });
  }
}
