// Claiming owner.json as a lease: the read of the current owner and the write of this process as
// the new one happen under one inter-process lock, so of two servers (or a server and its
// `--recover` restart) reaching for the same conversation at once exactly one gets it; the other
// is told who holds it. A holder whose process is gone, or whose heartbeat went stale (another
// host), has lost the lease and is taken over.
import { withLock } from '../store/lock.js';
import type { Liveness, OwnerRecord } from './owner.js';
import { checkLiveness, ownerRecordForThisProcess, readOwner, writeOwner } from './owner.js';

export type Claim =
  | { ok: true; owner: OwnerRecord; previous: OwnerRecord | undefined }
  | { ok: false; holder: Extract<Liveness, { status: 'alive' | 'remote' }> };

export function claimOwner(path: string, settings: { heartbeatIntervalMs: number; staleThresholdMs: number }): Promise<Claim> {
  return withLock(path, () => {
    const previous = readOwner(path);
    const liveness = checkLiveness(previous);
    if (liveness.status === 'alive' || liveness.status === 'remote') return { ok: false, holder: liveness };
    const owner = ownerRecordForThisProcess(settings);
    writeOwner(path, owner);
    return { ok: true, owner, previous };
  });
}
