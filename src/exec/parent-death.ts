// Processes that die with the process that started them. A server's agent must not outlive a
// SIGKILLed server (issue 19): the kernel's parent-death signal, set by util-linux's `setpriv` on
// the very process Node starts, kills it the moment its parent goes. In the sandbox that process
// leads to bubblewrap (`--die-with-parent`, its own PID namespace), so the whole sandbox goes with
// it. Where `setpriv` is missing, the start-up sweep of recorded process groups is the only fence.
import { accessSync, constants } from 'node:fs';
import type { Launch, LaunchSpec, ProcessExecutor } from './types.js';

const SETPRIV_PATHS = ['/usr/bin/setpriv', '/bin/setpriv'];
let setprivPath: string | null | undefined;

/** util-linux's setpriv, when this machine has it (Linux only). */
export function findSetpriv(): string | undefined {
  if (setprivPath === undefined) {
    setprivPath = null;
    if (process.platform === 'linux') {
      for (const path of SETPRIV_PATHS) {
        try {
          accessSync(path, constants.X_OK);
          setprivPath = path;
          break;
        } catch {
          // Not here.
        }
      }
    }
  }
  return setprivPath ?? undefined;
}

/** The launch, started so that the kernel SIGKILLs it when its parent process dies. */
export function dieWithParent(launch: Launch, setpriv = findSetpriv()): Launch {
  if (!setpriv) return launch;
  const program = launch.shell ? ['/bin/sh', '-c', [launch.command, ...launch.args].join(' ')] : [launch.command, ...launch.args];
  return { ...launch, command: setpriv, args: ['--pdeathsig', 'KILL', '--', ...program], shell: false };
}

/** An executor whose processes die with this process. */
export function diesWithParent(executor: ProcessExecutor): ProcessExecutor {
  return {
    mode: executor.mode,
    prepare: async (spec: LaunchSpec) => dieWithParent(await executor.prepare(spec)),
    beginStep: executor.beginStep ? () => executor.beginStep!() : undefined,
    close: executor.close ? () => executor.close!() : undefined,
  };
}
