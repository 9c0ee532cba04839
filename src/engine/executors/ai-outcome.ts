// What an ai step attempt tells people and the hook: tokens and cost over its agent runs (a
// resumed session that fell back to a fresh one is two runs), the tool calls the agent was refused,
// and whether a failure is the same one the previous attempt had.
import { describeDenial } from '../../agent/claude-result.js';
import type { UsageFigures } from '../../conversation/totals.js';
import { formatCost, formatTokens } from '../../conversation/totals.js';
import type { ConversationRecord, PermissionDenial } from '../../domain/conversation.js';
import type { Hook } from '../../domain/hook.js';
import { guardToolCall } from '../../integrations/claude/guard.js';

/** output_tokens and cost_usd are null when some run's are unknown (cut off before its result). */
export interface AttemptLedger extends UsageFigures {
  conversations: string[];
}

export function attemptLedger(records: readonly ConversationRecord[]): AttemptLedger {
  const ledger: AttemptLedger = {
    input_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    output_tokens: 0,
    cost_usd: 0,
    partial: false,
    conversations: [],
  };
  let anyCost = false;
  for (const r of records) {
    const s = r.stats;
    ledger.conversations.push(r.id);
    ledger.input_tokens += s.total_input_tokens;
    ledger.cache_read_tokens += s.cache_read_tokens;
    ledger.cache_creation_tokens += s.cache_creation_tokens;
    ledger.output_tokens =
      ledger.output_tokens === null || s.total_output_tokens === null ? null : ledger.output_tokens + s.total_output_tokens;
    if (s.cost_usd !== null) anyCost = true;
    ledger.cost_usd = ledger.cost_usd === null || s.cost_usd === null ? null : ledger.cost_usd + s.cost_usd;
    if (s.partial) ledger.partial = true;
  }
  if (!anyCost) ledger.cost_usd = null;
  return ledger;
}

/** "1,234 in / 56 out tokens, $0.0123" (input counts cache reads and writes); '' when the agent reported none. */
export function formatLedger(l: AttemptLedger): string {
  const input = l.input_tokens + l.cache_read_tokens + l.cache_creation_tokens;
  if (input === 0 && !l.output_tokens && l.cost_usd === null) return '';
  const out = l.output_tokens === null ? 'output unknown' : `${formatTokens(l.output_tokens)} out tokens`;
  const cost = l.cost_usd === null ? (l.partial ? ', cost unknown' : '') : `, ${l.partial ? '≥' : ''}${formatCost(l.cost_usd)}`;
  return `${formatTokens(input)} in / ${out}${cost}`;
}

export function denialSummary(denials: readonly PermissionDenial[]): string {
  const shown = [...new Set(denials.map(describeDenial))];
  return `the agent was refused ${denials.length} tool call${denials.length === 1 ? '' : 's'}: ${shown.slice(0, 5).join(', ')}${shown.length > 5 ? `, … (${shown.length - 5} more)` : ''}`;
}

/**
 * The refusals atlas's own guard made (it would refuse the same call again: keys, ATLAS_HOME,
 * a task's records), apart from the calls Claude Code's permission settings refused. Only the
 * latter can be allowed; the guard's are never the agent's to make.
 */
export function sortDenials(
  denials: readonly PermissionDenial[],
  cwd: string,
  home: string,
): { guard: { denial: PermissionDenial; reason: string }[]; permission: PermissionDenial[] } {
  const guard: { denial: PermissionDenial; reason: string }[] = [];
  const permission: PermissionDenial[] = [];
  for (const denial of denials) {
    const reason = guardToolCall({ toolName: denial.tool_name, toolInput: denial.tool_input, cwd, home });
    if (reason) guard.push({ denial, reason: reason.replace(/^atlas guard: /, '') });
    else permission.push(denial);
  }
  return { guard, permission };
}

/** The warning lines of an attempt's refusals: what atlas refused and why; how to allow the rest (`withHint`). */
export function denialWarnings(sorted: ReturnType<typeof sortDenials>, withHint = true): string[] {
  const lines: string[] = [];
  if (sorted.guard.length > 0) {
    const n = sorted.guard.length;
    const first = sorted.guard[0]!;
    lines.push(
      `atlas refused ${n} tool call${n === 1 ? '' : 's'} of the agent (atlas guard): ${describeDenial(first.denial)}: ${first.reason}${n > 1 ? ` (and ${n - 1} more, in the hook's event)` : ''}`,
    );
  }
  if (sorted.permission.length > 0)
    lines.push(withHint ? `${denialSummary(sorted.permission)}; ${DENIAL_HINT}` : denialSummary(sorted.permission));
  return lines;
}

export const DENIAL_HINT =
  'allow what the step needs with config ai.allowed_tools (e.g. -c \'ai.allowed_tools=["Bash(make test:*)"]\') ' +
  'or the step\'s allowed_tools in the template; see docs/conversations.md, "Permission denials"';

/** The error the step's previous attempt failed with (its step_retry or step_failed event). */
export function previousAttemptError(hook: Hook, stepIndex: number): string | undefined {
  for (let i = hook.history.length - 1; i >= 0; i--) {
    const e = hook.history[i]!;
    if (e.details?.['step_index'] !== stepIndex) continue;
    if (e.trigger === 'step_retry' || e.trigger === 'step_failed')
      return typeof e.details['error'] === 'string' ? e.details['error'] : undefined;
    if (e.trigger === 'step_complete' || e.trigger === 'step_skipped') return undefined;
  }
  return undefined;
}
