// A session's tokens from Claude Code's transcript (JSONL): assistant entries carry the API
// message id and its usage, and one message is logged once per content block, so usage counts
// once per message id. Subagents' transcripts (`<session>/subagents/agent-*.jsonl`) are counted
// too: their calls are the session's cost as well.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

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

function collect(path: string, rows: Map<string, Row>): void {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return;
  }
  for (const line of text.split('\n')) {
    if (!line.includes('"assistant"') || !line.includes('"usage"')) continue;
    let entry: { type?: unknown; message?: { id?: unknown; model?: unknown; usage?: Record<string, unknown> } };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line being written as we read
    }
    const message = entry.message;
    if (entry.type !== 'assistant' || typeof message?.id !== 'string' || !message.usage) continue;
    const u = message.usage;
    const previous = rows.get(message.id);
    // The same message logged again (one line per content block): keep the largest figures.
    rows.set(message.id, {
      model: typeof message.model === 'string' ? message.model : previous?.model ?? '',
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

export function transcriptUsage(transcriptPath: string): UsageTotals {
  const rows = new Map<string, Row>();
  collect(transcriptPath, rows);
  for (const path of subagentTranscripts(transcriptPath)) collect(path, rows);
  const totals: UsageTotals = { messages: rows.size, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_creation_tokens: 0, models: [], model: '' };
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
