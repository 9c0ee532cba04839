// What a litter sweep removed, in words (recovery's diagnosis, cleanup's report).
import { dirname, relative } from 'node:path';
import type { LitterSweep } from './litter.js';

/** e.g. "3 sandbox stub(s) in /w (.bashrc, .claude, .idea), 1 bridge socket(s)"; empty when nothing was removed. */
export function describeSweep(sweep: LitterSweep, worktree: string): string {
  const parts: string[] = [];
  if (sweep.stubs.length)
    parts.push(
      `${sweep.stubs.length} sandbox stub(s) in ${worktree} (${sweep.stubs.map((p) => relative(worktree, p) || dirname(p)).join(', ')})`,
    );
  if (sweep.sockets.length) parts.push(`${sweep.sockets.length} bridge socket(s)`);
  if (sweep.processes.length) parts.push(`${sweep.processes.length} orphaned socat process(es)`);
  if (sweep.temp_dirs.length) parts.push(`${sweep.temp_dirs.length} empty temp folder(s)`);
  return parts.join(', ');
}
