// HOOK.md's agent sections: tokens and cost per step, and the last messages of the active agent
// step's conversation. Pure, like markdown.ts.
import type { ConversationView } from '../conversation/hook-view.js';
import { costText, formatTokens, outputText } from '../conversation/totals.js';
import { messageLines } from '../conversation/transcript.js';

const BODY_CHARS = 600;

export function usageCells(view: ConversationView | undefined, stepName: string): string {
  const t = view?.perStep.get(stepName);
  if (!t) return ' — | — |';
  const cache = t.cache_read_tokens + t.cache_creation_tokens;
  return ` ${formatTokens(t.input_tokens)} in${cache > 0 ? ` (+${formatTokens(cache)} cache)` : ''} / ${outputText(t)} out${t.partial > 0 ? ' (partial)' : ''} | ${costText(t)} |`;
}

export function lastMessages(view: ConversationView | undefined): string[] {
  const last = view?.last;
  if (!last) return [];
  const c = last.conversation;
  const lines = [
    '## Last agent messages',
    '',
    `The latest ${last.messages.length} message${last.messages.length === 1 ? '' : 's'} of conversation \`${c.id}\` (step ${c.step_name}, attempt ${c.attempt}, ${c.status})` +
      `${c.session_id ? `, agent session \`${c.session_id}\`` : ''}. The full transcript: \`atlas conversation ${c.task_id} --step ${c.step_name}\`.`,
    '',
  ];
  if (last.messages.length === 0) lines.push('(no messages recorded yet)');
  else lines.push('```text', ...last.messages.flatMap((m) => messageLines(m, BODY_CHARS)).map((l) => l.replace(/```/g, "'''")), '```');
  lines.push('');
  return lines;
}
