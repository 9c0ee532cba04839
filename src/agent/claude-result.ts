// The ledger's figures in Claude Code's final `result` event: totals (`usage`, `total_cost_usd`),
// per-model rows (`modelUsage`, camelCase) and the tool calls it refused (`permission_denials`).
import type { ModelUsageRow, PermissionDenial } from '../domain/conversation.js';

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}

export function parseModelUsage(v: unknown): ModelUsageRow[] {
  if (!isObj(v)) return [];
  return Object.entries(v)
    .filter((entry): entry is [string, Obj] => isObj(entry[1]))
    .map(([model, u]) => ({
      model,
      input_tokens: count(u['inputTokens']),
      output_tokens: count(u['outputTokens']),
      cache_read_tokens: count(u['cacheReadInputTokens']),
      cache_creation_tokens: count(u['cacheCreationInputTokens']),
      cost_usd: typeof u['costUSD'] === 'number' && Number.isFinite(u['costUSD']) ? u['costUSD'] : null,
    }));
}

export function parsePermissionDenials(v: unknown): PermissionDenial[] {
  if (!Array.isArray(v)) return [];
  return v.filter(isObj).map((d) => ({
    tool_name: typeof d['tool_name'] === 'string' ? d['tool_name'] : 'tool',
    tool_use_id: typeof d['tool_use_id'] === 'string' ? d['tool_use_id'] : '',
    tool_input: isObj(d['tool_input']) ? d['tool_input'] : {},
  }));
}

/** How a denial reads to people and in --allowedTools form: Bash(npm test), Write(src/x.ts), WebFetch. */
export function describeDenial(d: PermissionDenial): string {
  const input = d.tool_input;
  const arg = [input['command'], input['file_path'], input['notebook_path'], input['url'], input['pattern']].find(
    (a) => typeof a === 'string',
  );
  if (typeof arg !== 'string') return d.tool_name;
  const flat = arg.replace(/\s+/g, ' ').trim();
  return `${d.tool_name}(${flat.length > 80 ? `${flat.slice(0, 79)}…` : flat})`;
}
