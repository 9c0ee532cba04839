// What HOOK.md and `atlas hook status` show of a task's conversations: tokens and cost per step,
// and, while an agent step is active (running, interrupted, crashed), the last messages of its
// latest conversation, which is what a fresh agent needs to carry on.
import type { ConversationRecord, Message } from '../domain/conversation.js';
import type { Hook } from '../domain/hook.js';
import { isTerminal } from '../domain/hook-state.js';
import type { Task } from '../domain/task.js';
import { conversationFiles } from './paths.js';
import type { Warn } from './read.js';
import { listConversations, readLastMessages } from './read.js';
import type { UsageTotals } from './totals.js';
import { totalsJson, totalsLine, totalsOf } from './totals.js';

export const LAST_MESSAGES = 6;

export interface ConversationView {
  total: UsageTotals;
  perStep: Map<string, UsageTotals>;
  last?: { conversation: ConversationRecord; messages: Message[] };
}

export function conversationView(
  taskDir: string,
  hook: Hook,
  task: Task | undefined,
  warn: Warn = () => undefined,
): ConversationView | undefined {
  const conversations = listConversations(taskDir, warn);
  if (conversations.length === 0) return undefined;
  const byStep = new Map<string, ConversationRecord[]>();
  for (const c of conversations) byStep.set(c.step_name, [...(byStep.get(c.step_name) ?? []), c]);
  const view: ConversationView = {
    total: totalsOf(conversations.map((c) => c.stats)),
    perStep: new Map([...byStep.entries()].map(([step, list]) => [step, totalsOf(list.map((c) => c.stats))])),
  };
  const step = hook.current_step;
  if (step && !isTerminal(hook.state) && task?.steps[step.step_index]?.type === 'ai') {
    const latest = byStep.get(step.step_name)?.at(-1);
    if (latest)
      view.last = { conversation: latest, messages: readLastMessages(conversationFiles(taskDir, latest.id).messages, LAST_MESSAGES, warn) };
  }
  return view;
}

/** The task's totals as `atlas hook status` shows them (undefined: no agent runs recorded). */
export function usageSummary(
  taskDir: string,
  hook: Hook,
  task: Task | undefined,
  warn: Warn,
): { json: ReturnType<typeof totalsJson>; line: string } | undefined {
  const view = conversationView(taskDir, hook, task, warn);
  return view ? { json: totalsJson(view.total), line: totalsLine(view.total) } : undefined;
}
