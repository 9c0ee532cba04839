// One Claude Code hook event, end to end: the guard's decision first (it must stand even if
// recording fails), then the request folder and the audit trail, then what the event tells the
// task. Returns what to print; the entry (entry.ts) turns failures into exit codes.
import { existsSync, readFileSync } from 'node:fs';
import { channelPath, sendMessage } from './channel-frame.js';
import { editedFiles, editedPath, isGitCommitCommand, newFiles } from './edit-tools.js';
import type { ClaudeHookEvent } from './event.js';
import { guardToolCall } from './guard.js';
import type { TaskLink } from './heartbeat.js';
import { requestFiles, sessionEventsFile } from './places.js';
import type { AgentRecord, RequestState } from './request-store.js';
import { appendContext, appendEventLine, ensureRequestDir, newRequestState, requestDir, updateRequestState } from './request-store.js';
import { requestIdOf, sessionScope, taskLinkOf } from './scope.js';
import type { SessionEntry } from './session-map.js';

export interface HookEnv {
  home: string;
  env: NodeJS.ProcessEnv;
  now?: () => Date;
}

export interface HookOutput {
  /** JSON for Claude Code on stdout. */
  stdout?: string;
  /** Set when recording failed after the decision was made (logged, non-blocking). */
  recordError?: unknown;
}

/** Did atlas launch this Claude Code (its stream is then the source of tokens and priming)? */
export function launchedByAtlas(env: NodeJS.ProcessEnv): boolean {
  return env['ATLAS_CLAUDE_LAUNCHED'] === '1' || Boolean(env['ATLAS_CONVERSATION_ID']);
}

function denyOutput(reason: string): string {
  return JSON.stringify({
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason },
  });
}

/** The guard could not judge a tool call: refused, to be safe (exit 2, reason on stderr). */
export class BlockingError extends Error {
  override name = 'BlockingError';
}

function judge(event: ClaudeHookEvent, home: string, env: NodeJS.ProcessEnv): string | undefined {
  try {
    return guardToolCall({ toolName: event.tool_name!, toolInput: event.tool_input ?? {}, cwd: event.cwd, home, env });
  } catch (error) {
    throw new BlockingError(
      `atlas could not check this ${event.tool_name} call (${(error as Error).message}), so it is refused; try again, or report it`,
    );
  }
}

export async function handleEvent(event: ClaudeHookEvent, ctx: HookEnv): Promise<HookOutput> {
  const output: HookOutput = {};
  let denied: string | undefined;
  if (event.hook_event_name === 'PreToolUse' && event.tool_name) {
    denied = judge(event, ctx.home, ctx.env);
    if (denied) output.stdout = denyOutput(denied);
  }
  const pipe = channelPath(ctx.env);
  try {
    // Sandbox mode: $ATLAS_HOME is read-only here; the atlas outside records what the channel brings.
    const context =
      pipe === undefined
        ? await recordEvent(event, ctx, denied)
        : sendMessage(pipe, { v: 1, input: JSON.stringify(event.raw), cwd: event.cwd, ...(denied ? { denied } : {}) });
    if (context) output.stdout = context;
  } catch (error) {
    if (!output.stdout) throw error;
    output.recordError = error;
  }
  return output;
}

/**
 * Which request folders events from an untrusted source may change beyond appending their event
 * line (the hook channel, channel-receive.ts): those it created itself. `adopt` is told of each.
 */
export interface RequestGate {
  owns(dir: string): boolean;
  adopt(dir: string): void;
}

/** Everything but the guard; returns SessionStart's priming output, if any. */
export async function recordEvent(
  event: ClaudeHookEvent,
  ctx: HookEnv,
  denied: string | undefined,
  gate?: RequestGate,
): Promise<string | undefined> {
  const now = ctx.now?.() ?? new Date();
  const at = now.toISOString();
  const launched = launchedByAtlas(ctx.env);
  const entry = await sessionScope(event, ctx.home, launched, now);
  const requestId = requestIdOf(event, entry);
  const dir = requestId ? requestDir(entry.base_dir, requestId) : undefined;
  let mine = true;
  if (dir && requestId) {
    if (gate && !existsSync(dir)) gate.adopt(dir);
    mine = !gate || gate.owns(dir);
    ensureRequestDir(dir, () => newRequestState(event, requestId, at));
    if (mine && event.hook_event_name === 'UserPromptSubmit' && !existsSync(requestFiles(dir).context)) {
      const source = event.source && event.source !== 'user' ? ` (source: ${event.source})` : '';
      appendContext(dir, `# Request${source}\n\n${event.prompt ?? ''}\n`);
    }
    appendEventLine(requestFiles(dir).events, event, at, denied);
  } else {
    appendEventLine(sessionEventsFile(entry.base_dir, event.session_id), event, at, denied);
  }
  if (dir && requestId && mine) await recordInRequest(event, dir, requestId, at);
  return entry.task_dir ? feedTask(event, entry, dir, ctx, now) : undefined;
}

function closeOpenAgents(agents: Record<string, AgentRecord>, at: string): Record<string, AgentRecord> {
  const out: Record<string, AgentRecord> = {};
  for (const [id, a] of Object.entries(agents)) out[id] = a.status === 'running' ? { ...a, status: 'unknown', ended_at: at } : a;
  return out;
}

/** Files the request's edit tools changed, from its audit trail (kept off the tool-call path). */
function filesFromEvents(dir: string): string[] {
  const files: string[] = [];
  let text = '';
  try {
    text = readFileSync(requestFiles(dir).events, 'utf8');
  } catch {
    return files;
  }
  for (const line of text.split('\n')) {
    if (!line.includes('"PostToolUse"')) continue;
    try {
      const e = JSON.parse(line) as { hook_event_name?: string; tool_name?: string; tool_input?: Record<string, unknown> };
      const path = e.hook_event_name === 'PostToolUse' ? editedPath(e.tool_name, e.tool_input) : undefined;
      if (path && !files.includes(path)) files.push(path);
    } catch {
      // a partial line: skipped
    }
  }
  return files;
}

async function recordInRequest(event: ClaudeHookEvent, dir: string, requestId: string, at: string): Promise<void> {
  const update = (change: (s: RequestState) => RequestState) => updateRequestState(dir, change);
  switch (event.hook_event_name) {
    case 'SubagentStart':
      if (event.agent_id) {
        const id = event.agent_id;
        await update((s) => ({
          ...s,
          agents: { ...s.agents, [id]: { agent_type: event.agent_type ?? 'unknown', started_at: at, status: 'running' } },
        }));
      }
      return;
    case 'SubagentStop': {
      const { extractContexts, extractWorkFiles } = await import('./tags.js');
      const { copyLog, writeWorkFiles } = await import('./request-store.js');
      const text = event.last_assistant_message ?? '';
      for (const extract of extractContexts(text))
        appendContext(dir, `\n## ${event.agent_type ?? 'subagent'} (${event.agent_id ?? '?'})\n\n${extract}\n`);
      writeWorkFiles(dir, extractWorkFiles(text));
      if (event.agent_id) copyLog(dir, event.agent_transcript_path, `agent-${event.agent_id}.jsonl`);
      const id = event.agent_id;
      if (id) {
        await update((s) => ({
          ...s,
          agents: {
            ...s.agents,
            [id]: { ...(s.agents[id] ?? { agent_type: event.agent_type ?? 'unknown', started_at: at }), status: 'stopped', ended_at: at },
          },
        }));
      }
      return;
    }
    case 'Stop':
    case 'StopFailure': {
      const { writeSessionSnapshot } = await import('./request-store.js');
      const { transcriptUsage } = await import('../../conversation/claude-transcript-usage.js');
      const { waitForFinalMessage } = await import('./transcript-complete.js');
      if (event.hook_event_name === 'Stop' && event.transcript_path)
        await waitForFinalMessage(event.transcript_path, event.last_assistant_message);
      writeSessionSnapshot(dir, event.transcript_path, requestId, event.session_id);
      const usage = event.transcript_path && existsSync(event.transcript_path) ? transcriptUsage(event.transcript_path) : undefined;
      const files = filesFromEvents(dir);
      await update((s) => {
        const next: RequestState = { ...s, agents: closeOpenAgents(s.agents, at), stopped_at: at, files_touched: files };
        if (usage) next.usage = usage;
        if (event.hook_event_name === 'Stop' && event.last_assistant_message !== undefined) next.last_output = event.last_assistant_message;
        if (event.hook_event_name === 'StopFailure') next.stop_error = event.error ?? event.last_assistant_message ?? 'unknown';
        return next;
      });
      return;
    }
    case 'SessionEnd':
      await update((s) => ({ ...s, agents: closeOpenAgents(s.agents, at), ended_at: at }));
      return;
    case 'PreCompact':
      await update((s) => ({ ...s, compactions: (s.compactions ?? 0) + 1 }));
      return;
  }
}

/** Events that change the task beyond its heartbeat. */
function feedsTask(event: ClaudeHookEvent, link: TaskLink): boolean {
  switch (event.hook_event_name) {
    case 'PostToolUse': {
      const command = event.tool_name === 'Bash' ? event.tool_input?.['command'] : undefined;
      return (
        newFiles(link, editedFiles(link, event.tool_name, event.tool_input)).length > 0 ||
        (typeof command === 'string' && isGitCommitCommand(command))
      );
    }
    case 'Stop':
    case 'SessionEnd':
    case 'SessionStart':
      return true;
    default:
      return false;
  }
}

/** What the event tells the task owning the working directory; SessionStart's priming. */
async function feedTask(
  event: ClaudeHookEvent,
  entry: SessionEntry,
  dir: string | undefined,
  ctx: HookEnv,
  now: Date,
): Promise<string | undefined> {
  const link = taskLinkOf(entry);
  if (!link) return undefined;
  // A Claude Code atlas launched is never taken for a person: if atlas died, that session is an
  // orphan, and the dead run's owner.json (with the process groups recovery must stop) stays.
  if (event.hook_event_name !== 'SessionEnd' && !entry.launched_by_atlas) {
    const { sessionHeartbeat } = await import('./heartbeat.js');
    await sessionHeartbeat(link, event.session_id, now);
  }
  if (!feedsTask(event, link)) return undefined;
  const { taskFeed } = await import('./task-events.js');
  return taskFeed({ event, entry, link, requestDir: dir, home: ctx.home, now });
}
