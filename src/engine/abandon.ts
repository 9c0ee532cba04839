// Abandoning a task: the hook goes to `abandoned` (a terminal state) and nothing else is touched;
// the working tree and branch stay for the user to keep or delete. OnTerminate hooks run after.
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import { isTerminal } from '../domain/hook-state.js';
import type { HookManager } from '../hook/manager.js';
import { checkLiveness, readOwner } from '../liveness/owner.js';

/** Throws when the task cannot be abandoned (ended, or running in a live process). */
export function assertAbandonable(manager: HookManager): Hook {
  const hook = manager.read();
  if (isTerminal(hook.state)) {
    throw new AtlasError(`task ${hook.task_id} has already ended (${hook.state})`, {
      exitCode: EXIT.input,
      hint: 'only tasks that have not ended can be abandoned',
    });
  }
  const live = checkLiveness(readOwner(manager.files.owner));
  if ((live.status === 'alive' && live.owner.pid !== process.pid) || live.status === 'remote') {
    throw new AtlasError(`task ${hook.task_id} is running in process ${live.owner.pid} on ${live.owner.host}`, {
      exitCode: EXIT.failure,
      hint: 'stop it first (Ctrl+C in its terminal), then run atlas abandon again',
    });
  }
  return hook;
}

/** `onAbandoned` runs once the hook is abandoned (OnTerminate); its failures never undo that. */
export async function abandonTask(manager: HookManager, note?: string, onAbandoned?: (hook: Hook) => Promise<void>): Promise<Hook> {
  const before = assertAbandonable(manager);
  const after = await manager.transition({
    to: 'abandoned',
    trigger: 'abandoned',
    ...(before.current_step ? { stepName: before.current_step.step_name } : {}),
    details: { by: 'user', ...(note ? { note } : {}) },
  });
  await onAbandoned?.(after);
  return after;
}
