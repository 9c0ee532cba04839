// The local executor: processes start on this machine exactly as asked.
import type { Launch, LaunchSpec, ProcessExecutor } from './types.js';

export const localExecutor: ProcessExecutor = {
  mode: 'local',
  prepare(spec: LaunchSpec): Promise<Launch> {
    return Promise.resolve({ command: spec.command, args: spec.args, shell: spec.shell, env: spec.env, finished: () => undefined });
  },
};
