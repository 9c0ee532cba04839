// atlas's builtin defaults for a task run, composed with what other layers add (workspace sync's
// restore and push): OnMessage records the message and OnStreamFinish records the usage and closes
// the conversation (src/conversation/bus.ts). Several builtins of one point run in order; the
// first failure is the builtin's failure.
import { recordingDefaults } from '../conversation/bus.js';
import type { LifecycleBuiltin, LifecycleBuiltins } from './bus.js';
import { LIFECYCLE_POINTS } from './types.js';

export function composeBuiltins(...sets: (LifecycleBuiltins | undefined)[]): LifecycleBuiltins {
  const result: LifecycleBuiltins = {};
  for (const point of LIFECYCLE_POINTS) {
    const fns = sets.map((s) => s?.[point]).filter((f): f is LifecycleBuiltin => f !== undefined);
    if (fns.length === 1) result[point] = fns[0]!;
    else if (fns.length > 1) {
      // The first runs synchronously up to its first await, like a single builtin.
      result[point] = async (event) => {
        for (const fn of fns) await fn(event);
      };
    }
  }
  return result;
}

/** The recording defaults as builtins (one set per task run). */
export function recordingBuiltins(): LifecycleBuiltins {
  const defaults = recordingDefaults();
  return {
    on_message: (event) => (event.point === 'on_message' ? defaults.message(event) : Promise.resolve()),
    on_stream_finish: (event) => (event.point === 'on_stream_finish' ? defaults.streamFinish(event) : Promise.resolve()),
  };
}
