// The local executor: processes start on this machine as asked; a shell line the shell would only
// split into words starts without it (plain-command.ts).
import { withoutShell } from './plain-command.js';
import type { Launch, LaunchSpec, ProcessExecutor } from './types.js';

export const localExecutor: ProcessExecutor = {
  mode: 'local',
  prepare(spec: LaunchSpec): Promise<Launch> {
    const direct = spec.shell && spec.args.length === 0 ? withoutShell(spec.command, spec.env, spec.cwd) : undefined;
    const start = direct
      ? { command: direct.program, args: direct.args, shell: false, env: direct.env }
      : { command: spec.command, args: spec.args, shell: spec.shell, env: spec.env };
    return Promise.resolve({ ...start, finished: () => undefined });
  },
};
