// Workspace sync as built-in lifecycle hooks (src/lifecycle/types.ts): the task runner composes
// these with its other builtins. OnColdStart restores (critical: the bus stops the step when it
// throws); OnStreamFinish pushes (non-critical: a failure is thrown for the bus to log with its
// detail and hint, and the step goes on).
import type { Config } from '../config/schema.js';
import { AtlasError } from '../domain/errors.js';
import type { LifecycleEvent, LifecyclePoint } from '../lifecycle/types.js';
import type { SyncTarget } from './stores/target.js';

export type SyncBuiltins = Partial<Record<LifecyclePoint, (event: LifecycleEvent) => Promise<void>>>;

/**
 * The sync builtins for a task run; none unless `sync.store` is set explicitly. `targetOf` names
 * what an event syncs when it is not the task's working tree (a server conversation's workspace);
 * `beforePublish` may refuse a push's version right before it is published (a server turn's fence).
 */
export function syncBuiltins(
  home: string,
  config: Config,
  warn: (text: string) => void = () => undefined,
  targetOf?: (event: LifecycleEvent) => SyncTarget,
  beforePublish?: () => Promise<void>,
): SyncBuiltins {
  if (config.sync.store.trim() === '') return {};
  const builtins: SyncBuiltins = {
    on_stream_finish: async (event) => {
      // Loaded on first use: a task run without sync never loads the sync code.
      const { pushWorkspaceOnStreamFinish } = await import('./lifecycle.js');
      const pushed = await pushWorkspaceOnStreamFinish({
        home,
        config,
        taskId: event.task_id,
        warn,
        ...(targetOf ? { target: targetOf(event) } : {}),
        ...(beforePublish ? { beforePublish } : {}),
      });
      if (pushed.status === 'failed') throw new AtlasError(pushed.error, pushed.hint ? { hint: pushed.hint } : {});
    },
  };
  if (config.sync.init_from_store) {
    builtins.on_cold_start = async (event) => {
      const { restoreWorkspaceOnColdStart } = await import('./lifecycle.js');
      await restoreWorkspaceOnColdStart({ home, config, taskId: event.task_id, warn, ...(targetOf ? { target: targetOf(event) } : {}) });
    };
  }
  return builtins;
}
