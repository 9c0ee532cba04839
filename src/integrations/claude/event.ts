// A Claude Code hook event as it arrives on stdin. Claude Code adds fields across versions, so
// only the common fields are required; everything else is optional and kept as it came (the
// audit trail records the whole payload).

/** The events atlas handles; any other name is accepted and only logged. */
export const CLAUDE_HOOK_EVENTS = [
  'SessionStart',
  'UserPromptSubmit',
  'PreToolUse',
  'PostToolUse',
  'PostToolUseFailure',
  'SubagentStart',
  'SubagentStop',
  'Stop',
  'StopFailure',
  'SessionEnd',
  'PreCompact',
] as const;
export type ClaudeHookEventName = (typeof CLAUDE_HOOK_EVENTS)[number];

export interface ClaudeHookEvent {
  session_id: string;
  hook_event_name: string;
  cwd: string;
  transcript_path?: string;
  prompt_id?: string;
  prompt?: string;
  source?: string;
  tool_name?: string;
  tool_input?: Record<string, unknown>;
  tool_response?: unknown;
  tool_use_id?: string;
  error?: string;
  last_assistant_message?: string;
  agent_id?: string;
  agent_type?: string;
  agent_transcript_path?: string;
  reason?: string;
  /** The payload exactly as received. */
  raw: Record<string, unknown>;
}

/** Bad input on stdin: not JSON, or missing a common field. */
export class EventInputError extends Error {
  override name = 'EventInputError';
}

const OPTIONAL_STRINGS = [
  'transcript_path',
  'prompt_id',
  'prompt',
  'source',
  'tool_name',
  'tool_use_id',
  'error',
  'last_assistant_message',
  'agent_id',
  'agent_type',
  'agent_transcript_path',
  'reason',
] as const;

/** Parses one event; `fallbackCwd` stands in when Claude Code sent no cwd. */
export function parseHookEvent(text: string, fallbackCwd: string): ClaudeHookEvent {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new EventInputError(`the event on stdin is not JSON (${(error as Error).message})`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new EventInputError('the event on stdin is not a JSON object');
  const raw = data as Record<string, unknown>;
  const name = raw['hook_event_name'];
  const session = raw['session_id'];
  if (typeof name !== 'string' || name.length === 0) throw new EventInputError('the event has no hook_event_name');
  if (typeof session !== 'string' || session.length === 0) throw new EventInputError('the event has no session_id');
  const cwd = typeof raw['cwd'] === 'string' && raw['cwd'].length > 0 ? raw['cwd'] : fallbackCwd;
  const event: ClaudeHookEvent = { session_id: session, hook_event_name: name, cwd, raw };
  for (const key of OPTIONAL_STRINGS) {
    const value = raw[key];
    if (typeof value === 'string') event[key] = value;
  }
  const input = raw['tool_input'];
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) event.tool_input = input as Record<string, unknown>;
  if ('tool_response' in raw) event.tool_response = raw['tool_response'];
  return event;
}

/** Names safe as one folder name (ids from Claude Code are UUIDs; anything else is cleaned). */
export function safeId(value: string): string {
  const cleaned = value
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 100);
  return cleaned.length > 0 ? cleaned : '_';
}
