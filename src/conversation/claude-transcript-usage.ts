// A session's tokens from Claude Code's transcript (JSONL): assistant entries carry the API
// message id and its usage, and one message is logged once per content block, so usage counts
// once per message id. Subagents' transcripts (`<session>/subagents/agent-*.jsonl`) are counted
// too: their calls are the session's cost as well.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ConversationStats } from '../domain/conversation.js';

export interface UsageTotals {
  /** Distinct assistant messages. */
  messages: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  /** Per model, in first-seen order. */
  models: { model: string; input_tokens: number; output_tokens: number; cache_read_tokens: number; cache_creation_tokens: number }[];
  /** The model of the first message. */
  model: string;
}

interface Row {
  model: string;
  input: number;
  output: number;
  cacheRead: number;
  cacheCreation: number;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);

/** Messages first logged before `sinceMs` (an earlier run of a resumed session) are left out. */
function collect(path: string, rows: Map<string, Row>, sinceMs?: number, earlier: Set<string> = new Set()): void {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return;
  }
  for (const line of text.split('\n')) {
    if (!line.includes('"assistant"') || !line.includes('"usage"')) continue;
    let entry: { type?: unknown; timestamp?: unknown; message?: { id?: unknown; model?: unknown; usage?: Record<string, unknown> } };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line being written as we read
    }
    const message = entry.message;
    if (entry.type !== 'assistant' || typeof message?.id !== 'string' || !message.usage) continue;
    if (sinceMs !== undefined && !rows.has(message.id)) {
      const at = typeof entry.timestamp === 'string' ? Date.parse(entry.timestamp) : Number.NaN;
      if (earlier.has(message.id) || (!Number.isNaN(at) && at < sinceMs)) {
        earlier.add(message.id);
        continue;
      }
    }
    const u = message.usage;
    const previous = rows.get(message.id);
    // The same message logged again (one line per content block): keep the largest figures.
    rows.set(message.id, {
      model: typeof message.model === 'string' ? message.model : (previous?.model ?? ''),
      input: Math.max(previous?.input ?? 0, num(u['input_tokens'])),
      output: Math.max(previous?.output ?? 0, num(u['output_tokens'])),
      cacheRead: Math.max(previous?.cacheRead ?? 0, num(u['cache_read_input_tokens'])),
      cacheCreation: Math.max(previous?.cacheCreation ?? 0, num(u['cache_creation_input_tokens'])),
    });
  }
}

/** Subagent transcripts Claude Code keeps beside the session's own. */
function subagentTranscripts(transcriptPath: string): string[] {
  const dir = join(transcriptPath.replace(/\.jsonl$/, ''), 'subagents');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => join(dir, f));
}

export function transcriptUsage(transcriptPath: string, options: { sinceMs?: number } = {}): UsageTotals {
  const rows = new Map<string, Row>();
  const earlier = new Set<string>();
  collect(transcriptPath, rows, options.sinceMs, earlier);
  for (const path of subagentTranscripts(transcriptPath)) collect(path, rows, options.sinceMs, earlier);
  const totals: UsageTotals = {
    messages: rows.size,
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    models: [],
    model: '',
  };
  for (const row of rows.values()) {
    totals.input_tokens += row.input;
    totals.output_tokens += row.output;
    totals.cache_read_tokens += row.cacheRead;
    totals.cache_creation_tokens += row.cacheCreation;
    if (!totals.model && row.model) totals.model = row.model;
    let m = totals.models.find((x) => x.model === row.model);
    if (!m) {
      m = { model: row.model, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_creation_tokens: 0 };
      totals.models.push(m);
    }
    m.input_tokens += row.input;
    m.output_tokens += row.output;
    m.cache_read_tokens += row.cacheRead;
    m.cache_creation_tokens += row.cacheCreation;
  }
  return totals;
}

/** Where Claude Code keeps a session's transcript: <config>/projects/<project>/<session>.jsonl. */
export function findClaudeTranscript(sessionId: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!/^[\w-]{1,200}$/.test(sessionId)) return undefined;
  const roots = [env['CLAUDE_CONFIG_DIR'], join(env['HOME'] ?? homedir(), '.claude')].filter((r): r is string => Boolean(r));
  for (const root of roots) {
    let projects: string[];
    try {
      projects = readdirSync(join(root, 'projects'));
    } catch {
      continue;
    }
    for (const project of projects) {
      const path = join(root, 'projects', project, `${sessionId}.jsonl`);
      if (existsSync(path)) return path;
    }
  }
  return undefined;
}

/**
 * The row of a Claude Code run that ended without its final result (killed, or atlas died under
 * it): still partial, its figures the transcript's for the messages this run was answered (each
 * message id once, never one an earlier run of the session counted), where that is more than the
 * stream showed. Output tokens are what the transcript holds; the cost stays unknown.
 */
export function cutOffRunStats(
  stats: ConversationStats,
  sessionId: string | null | undefined,
  startedAt: string,
  env: NodeJS.ProcessEnv = process.env,
): ConversationStats {
  if (!sessionId) return stats;
  const path = findClaudeTranscript(sessionId, env);
  if (!path) return stats;
  const t = transcriptUsage(path, { sinceMs: Date.parse(startedAt) });
  if (t.messages === 0) return stats;
  const read = Math.max(stats.cache_read_tokens, t.cache_read_tokens);
  const creation = Math.max(stats.cache_creation_tokens, t.cache_creation_tokens);
  return {
    ...stats,
    total_input_tokens: Math.max(stats.total_input_tokens, t.input_tokens),
    total_output_tokens: t.output_tokens,
    cache_read_tokens: read,
    cache_creation_tokens: creation,
    total_cache_tokens: read + creation,
    cost_usd: null,
    partial: true,
    models: t.models.map((m) => ({ ...m, cost_usd: null })),
  };
}
