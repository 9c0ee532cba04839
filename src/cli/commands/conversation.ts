// atlas conversation [TASK] [--step NAME] [--attempt N] [--json]: a task's agent transcripts.

import { conversationFiles } from '../../conversation/paths.js';
import { listConversations, readMessages } from '../../conversation/read.js';
import { transcript } from '../../conversation/transcript.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { requireTask } from '../../hook/resolve-task.js';
import type { CliContext } from '../context.js';

export default async function conversation(
  ctx: CliContext,
  taskId: string | undefined,
  opts: { step?: string; attempt?: string },
): Promise<number> {
  let attempt: number | undefined;
  if (opts.attempt !== undefined) {
    attempt = /^\d+$/.test(opts.attempt) ? Number(opts.attempt) : NaN;
    if (!Number.isInteger(attempt) || attempt < 1)
      throw new AtlasError(`--attempt expects a whole number from 1, got "${opts.attempt}"`, { exitCode: EXIT.input });
  }
  const { ref, task } = requireTask({ taskId, cwd: ctx.cwd, home: ctx.home, includeEnded: true });
  const warn = (text: string) => ctx.out.warn(text);
  const all = listConversations(ref.dir, warn);
  const chosen = all.filter(
    (c) => (opts.step === undefined || c.step_name === opts.step) && (attempt === undefined || c.attempt === attempt),
  );
  if (chosen.length === 0) {
    const what = [opts.step !== undefined ? `step ${opts.step}` : '', attempt !== undefined ? `attempt ${attempt}` : '']
      .filter(Boolean)
      .join(', ');
    const steps = [...new Set(all.map((c) => c.step_name))];
    throw new AtlasError(`task ${task.id} has no agent conversation${what ? ` for ${what}` : ''}`, {
      exitCode: EXIT.notFound,
      hint: steps.length > 0 ? `its conversations belong to: ${steps.join(', ')}` : 'conversations are recorded when an ai step runs',
    });
  }
  const withMessages = chosen.map((c) => ({ ...c, messages: readMessages(conversationFiles(ref.dir, c.id).messages, warn) }));
  ctx.out.result({ task_id: task.id, conversations: withMessages }, () =>
    withMessages.map(({ messages, ...c }) => transcript(c, messages)).join('\n\n'),
  );
  return EXIT.ok;
}
