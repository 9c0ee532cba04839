// Claiming owner.json as a lease: of two servers (or a server and its `--recover` restart)
// reaching for the same conversation at once exactly one gets it; the other is told who holds it.
// With no record (the usual case: the last turn's owner removed its own), the claim creates it
// whole only if the name is still free (create-whole.ts), without the lock. Otherwise the read of
// the current owner and the write of this process as the new one happen under one inter-process
// lock: a holder whose process is gone, or whose heartbeat went stale (another host), has lost the
// lease and is taken over.
import { createFileWhole } from '../store/create-whole.js';
import { toJson } from '../store/json-file.js';
import { withLock } from '../store/lock.js';
import type { Liveness, OwnerRecord } from './owner.js';
import { checkLiveness, ownerRecordForThisProcess, readOwner, writeOwner } from './owner.js';

/** Times a claim under the lock tries to create a missing record before it replaces what is there. */
const TRIES = 3;

export type Claim =
  | { ok: true; owner: OwnerRecord; previous: OwnerRecord | undefined }
  | { ok: false; holder: Extract<Liveness, { status: 'alive' | 'remote' }> };

/** `extra`: fields the claimed record carries besides this process's own (where its process groups go). */
export async function claimOwner(
  path: string,
  settings: { heartbeatIntervalMs: number; staleThresholdMs: number },
  extra: Pick<OwnerRecord, 'process_groups_file'> = {},
): Promise<Claim> {
  const first = { ...ownerRecordForThisProcess(settings), ...extra };
  if ((await createFileWhole(path, toJson(first))) === 'created') return { ok: true, owner: first, previous: undefined };
  return withLock(path, async () => {
    for (let attempt = 0; ; attempt++) {
      const previous = readOwner(path);
      const liveness = checkLiveness(previous);
      if (liveness.status === 'alive' || liveness.status === 'remote') return { ok: false, holder: liveness };
      // Made again: the lock may have taken a while, and the record's heartbeat starts now.
      const owner = { ...ownerRecordForThisProcess(settings), ...extra };
      if (previous === undefined && attempt < TRIES) {
        // Removed since: created only if still free, as a claim that does not take the lock does
        // (a rename would replace its record). Taken meanwhile: that holder is judged again; a
        // record that stays unreadable (torn) is replaced below.
        const made = await createFileWhole(path, toJson(owner));
        if (made === 'created') return { ok: true, owner, previous };
        if (made === 'exists') continue;
      }
      // A record to take over (or a torn one, or no hard links here): replaced whole, under the lock.
      writeOwner(path, owner);
      return { ok: true, owner, previous };
    }
  });
}
