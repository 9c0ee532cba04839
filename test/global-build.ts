// Before any worker starts: builds dist/ once (two workers finding it stale at once would rebuild
// it together, one test running the CLI while the other build rewrites it), probes moto once, and
// puts the run's temp folders under one folder of its own, removed when the run ends.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBridgeProcessesWhere } from '../src/exec/sandbox/socat.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { MOTO_PROBE_ENV, motoMissing } from './helpers/moto.js';

export default function setup(): () => void {
  ensureBuilt();
  // Whether moto can run is asked once (a second of Python each time), not by every file using it.
  process.env[MOTO_PROBE_ENV] = motoMissing() ?? '';
  // The tests make thousands of temp folders (about 1 GB): workers inherit TMPDIR, so they all land
  // here. Open to all like /tmp: some tests run programs as `nobody`.
  const root = mkdtempSync(join(tmpdir(), 'atlas-suite-'));
  chmodSync(root, 0o1777);
  process.env['TMPDIR'] = root;
  return () => {
    // A sandboxed run SIGKILLed on purpose and never recovered leaves the socat bridges of its
    // network proxies serving sockets in here (src/exec/sandbox/socat.ts): they go with the run.
    for (const pid of findBridgeProcessesWhere((socket) => socket.startsWith(`${root}/`))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    // Removed in the background: the run's result does not wait on deleting a gigabyte.
    spawn('rm', ['-rf', root], { detached: true, stdio: 'ignore' }).unref();
  };
}
