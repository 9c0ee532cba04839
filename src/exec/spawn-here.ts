// Processes started by this process itself: in a new session and process group each (so the whole
// tree can be signalled as one), under the person's umask, their input written and stdin closed.
import { spawn } from 'node:child_process';
import { withPersonUmask } from '../store/private-umask.js';
import type { ProcessSpawner } from './types.js';

const GROUPS = process.platform !== 'win32';

export const localSpawner: ProcessSpawner = {
  spawn(spec) {
    const child = withPersonUmask(() =>
      spawn(spec.command, spec.args, {
        cwd: spec.cwd,
        env: spec.env,
        shell: spec.shell,
        detached: GROUPS,
        stdio: [spec.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe', ...(spec.fd3 ? ['pipe' as const] : [])],
        windowsHide: true,
      }),
    );
    if (spec.input !== undefined && child.stdin) {
      // The process may exit without reading its input (EPIPE): not our failure.
      child.stdin.on('error', () => undefined);
      child.stdin.end(spec.input);
    }
    return child;
  },
};
