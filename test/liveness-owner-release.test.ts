// Heartbeat.release(): the server's turn gives owner.json back off the event loop, removing only
// its own record (another process's claim since is kept), and stops beating.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readOwner, startHeartbeat } from '../src/liveness/owner.js';
import { tempDir } from './helpers/core-fixtures.js';

const settings = { heartbeatIntervalMs: 60_000, staleThresholdMs: 300_000 };

describe('Heartbeat.release', () => {
  it("removes this process's record, and is fine when it is gone already", async () => {
    const path = join(tempDir(), 'owner.json');
    const hb = startHeartbeat(path, settings);
    expect(readOwner(path)?.pid).toBe(process.pid);
    await hb.release();
    expect(existsSync(path)).toBe(false);
    await startHeartbeat(path, settings).release();
    const gone = startHeartbeat(path, settings);
    await gone.release();
    await gone.release();
    expect(existsSync(path)).toBe(false);
  });

  it('keeps a record another process wrote since, and writes no beat after', async () => {
    const path = join(tempDir(), 'owner.json');
    const hb = startHeartbeat(path, settings);
    const other = { ...readOwner(path)!, pid: process.pid + 100_000 };
    writeFileSync(path, JSON.stringify(other));
    await hb.release();
    expect(readOwner(path)).toEqual(other);
    hb.setProcessGroups([process.pid]);
    expect(readOwner(path)).toEqual(other);
  });

  it('in the background, records a new process group from the thread pool, and release() waits for it before removing the record', async () => {
    const path = join(tempDir(), 'owner.json');
    const hb = startHeartbeat(path, settings, undefined, { background: true });
    hb.setProcessGroups([process.pid]);
    // Not written on the calling thread: the claim's record is still there as it was.
    expect(readOwner(path)?.process_groups).toBeUndefined();
    while (!readOwner(path)?.process_groups) await new Promise((done) => setImmediate(done));
    expect(readOwner(path)?.process_groups).toEqual([{ pid: process.pid, process_start: expect.any(String) }]);
    // A write still on its way when the turn ends does not put the record back after its removal.
    hb.setProcessGroups([process.pid, process.ppid]);
    await hb.release();
    // (release() waited for it: nothing of this heartbeat is left to write.)
    expect(existsSync(path)).toBe(false);
  });
});
