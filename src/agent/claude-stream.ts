// Claude Code's `-p --output-format stream-json --verbose` output: one JSON event per line.
//   {"type":"system","subtype":"init","session_id":...}
//   {"type":"assistant","message":{"content":[{"type":"text","text":...},{"type":"tool_use","name":"Edit","input":{"file_path":...}}]}}
//   {"type":"user","message":{"content":[{"type":"tool_result",...}]}}
//   {"type":"result","subtype":"success","is_error":false,"result":...,"session_id":...,"usage":{...},"total_cost_usd":...}
// The parser turns lines into updates the runner records (session id, files, text, usage).
import { isAbsolute, relative, sep } from 'node:path';
import type { PermissionDenial } from '../domain/conversation.js';
import { parsePermissionDenials } from './claude-result.js';

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export type AgentUpdate =
  | { kind: 'session'; sessionId: string }
  | { kind: 'text'; text: string }
  | { kind: 'tool'; name: string; summary: string; workingOn: string; file?: string; id?: string }
  | {
      kind: 'result';
      isError: boolean;
      text: string;
      usage?: TokenUsage;
      costUsd?: number;
      sessionId?: string;
      permissionDenials: PermissionDenial[];
    }
  /** Every stream-json event as parsed, before the updates drawn from it (the conversation recorder reads these). */
  | { kind: 'event'; event: Record<string, unknown> }
  /** Claude Code retries a failed API request (its `system` `api_retry` event). */
  | { kind: 'retry'; attempt: number; maxRetries: number; status?: number; error?: string; delayMs: number }
  /** A line that is not a stream-json event (printed as is). */
  | { kind: 'raw'; text: string };

/** Tools whose input names a file they change. */
const EDIT_TOOLS: Record<string, string> = {
  Edit: 'file_path',
  Write: 'file_path',
  MultiEdit: 'file_path',
  NotebookEdit: 'notebook_path',
};

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function oneLine(text: string, max = 100): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function parseUsage(v: unknown): TokenUsage | undefined {
  if (!isObj(v)) return undefined;
  return {
    input_tokens: num(v['input_tokens']),
    output_tokens: num(v['output_tokens']),
    cache_creation_input_tokens: num(v['cache_creation_input_tokens']),
    cache_read_input_tokens: num(v['cache_read_input_tokens']),
  };
}

/** The tool results a `user` event carries: which call, and whether it failed. */
export function toolResults(event: Record<string, unknown>): { id: string; isError: boolean }[] {
  const message = event['message'];
  const content = isObj(message) && Array.isArray(message['content']) ? message['content'] : [];
  return content
    .filter((b): b is Obj => isObj(b) && b['type'] === 'tool_result' && typeof b['tool_use_id'] === 'string')
    .map((b) => ({ id: b['tool_use_id'] as string, isError: b['is_error'] === true }));
}

export class ClaudeStreamParser {
  private buffer = '';
  private readonly roots: string[];

  constructor(worktree: string, worktreeRealpath?: string) {
    this.roots = [...new Set([worktree, worktreeRealpath].filter((r): r is string => Boolean(r)))];
  }

  /** A path the agent named, relative to the working tree; undefined when outside it. */
  relativePath(path: string): string | undefined {
    if (!isAbsolute(path)) return path.startsWith('..') ? undefined : path.replace(/^\.\//, '');
    for (const root of this.roots) {
      const rel = relative(root, path);
      if (rel.length > 0 && !rel.startsWith('..') && !isAbsolute(rel)) return rel.split(sep).join('/');
    }
    return undefined;
  }

  push(chunk: string): AgentUpdate[] {
    this.buffer += chunk;
    const updates: AgentUpdate[] = [];
    for (let newline = this.buffer.indexOf('\n'); newline >= 0; newline = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      updates.push(...this.parseLine(line));
    }
    return updates;
  }

  end(): AgentUpdate[] {
    const rest = this.buffer;
    this.buffer = '';
    return rest.trim().length > 0 ? this.parseLine(rest) : [];
  }

  parseLine(line: string): AgentUpdate[] {
    const trimmed = line.trim();
    if (trimmed.length === 0) return [];
    let event: unknown;
    try {
      event = JSON.parse(trimmed);
    } catch {
      return [{ kind: 'raw', text: line }];
    }
    if (!isObj(event)) return [{ kind: 'raw', text: line }];
    const updates: AgentUpdate[] = [{ kind: 'event', event }];
    const sessionId = str(event['session_id']);
    switch (event['type']) {
      case 'system':
        if (sessionId) updates.push({ kind: 'session', sessionId });
        if (event['subtype'] === 'api_retry') {
          const status = event['error_status'];
          const error = str(event['error']);
          updates.push({
            kind: 'retry',
            attempt: num(event['attempt']),
            maxRetries: num(event['max_retries']),
            delayMs: num(event['retry_delay_ms']),
            ...(typeof status === 'number' ? { status } : {}),
            ...(error ? { error } : {}),
          });
        }
        break;
      case 'assistant': {
        const message = event['message'];
        const content = isObj(message) && Array.isArray(message['content']) ? message['content'] : [];
        for (const block of content) {
          if (!isObj(block)) continue;
          if (block['type'] === 'text') {
            const text = str(block['text']);
            if (text && text.trim().length > 0) updates.push({ kind: 'text', text });
          } else if (block['type'] === 'tool_use') {
            const id = str(block['id']);
            updates.push({
              ...this.toolUpdate(str(block['name']) ?? 'tool', isObj(block['input']) ? block['input'] : {}),
              ...(id ? { id } : {}),
            });
          }
        }
        break;
      }
      case 'result': {
        const usage = parseUsage(event['usage']);
        const cost = event['total_cost_usd'] ?? event['cost_usd'];
        updates.push({
          kind: 'result',
          isError: event['is_error'] === true || (typeof event['subtype'] === 'string' && event['subtype'] !== 'success'),
          text: str(event['result']) ?? (typeof event['subtype'] === 'string' ? event['subtype'] : ''),
          ...(usage ? { usage } : {}),
          ...(typeof cost === 'number' ? { costUsd: cost } : {}),
          ...(sessionId ? { sessionId } : {}),
          permissionDenials: parsePermissionDenials(event['permission_denials']),
        });
        break;
      }
      default:
        // user (tool results) and other events reach the conversation through the 'event' update.
        break;
    }
    return updates;
  }

  private toolUpdate(name: string, input: Obj): Extract<AgentUpdate, { kind: 'tool' }> {
    const fileKey = EDIT_TOOLS[name];
    if (fileKey) {
      const path = str(input[fileKey]) ?? '';
      const rel = path ? this.relativePath(path) : undefined;
      const shown = rel ?? path;
      return { kind: 'tool', name, summary: `${name} ${shown}`, workingOn: `editing ${shown}`, ...(rel ? { file: rel } : {}) };
    }
    const path = str(input['file_path']) ?? str(input['path']);
    const shownPath = path ? (this.relativePath(path) ?? path) : undefined;
    switch (name) {
      case 'Bash': {
        const command = oneLine(str(input['command']) ?? '');
        return { kind: 'tool', name, summary: `$ ${command}`, workingOn: `running ${command}` };
      }
      case 'Read':
        return { kind: 'tool', name, summary: `Read ${shownPath ?? ''}`, workingOn: `reading ${shownPath ?? 'files'}` };
      case 'Grep':
      case 'Glob': {
        const pattern = oneLine(str(input['pattern']) ?? '');
        return { kind: 'tool', name, summary: `${name} ${pattern}`, workingOn: `searching for ${pattern}` };
      }
      case 'Task': {
        const description = oneLine(str(input['description']) ?? 'subtask');
        return { kind: 'tool', name, summary: `Task ${description}`, workingOn: description };
      }
      default:
        return { kind: 'tool', name, summary: shownPath ? `${name} ${shownPath}` : name, workingOn: `using ${name}` };
    }
  }
}
