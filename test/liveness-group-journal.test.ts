// One file per server process for its turns' process groups (src/liveness/group-journal.ts): a
// turn appends to it instead of rewriting owner.json, and whoever takes a dead owner's turn over
// reads that owner's lines.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GroupJournal, withJournalGroups } from '../src/liveness/group-journal.js';
import type { OwnerRecord } from '../src/liveness/owner.js';
import { tempDir } from './helpers/core-fixtures.js';

const record = (file?: string): OwnerRecord => ({
  pid: 999_999,
  host: hostname(),
  process_start: 'x',
  started_at: '2026-01-01T00:00:00Z',
  heartbeat_at: '2026-01-01T00:00:00Z',
  heartbeat_interval_ms: 1000,
  stale_threshold_ms: 5000,
  process_groups: [{ pid: 4242, process_start: 'a' }],
  ...(file ? { process_groups_file: file } : {}),
});

describe('GroupJournal', () => {
  it("adds an owner's recorded groups to its record, and only that owner's", () => {
    const dir = join(tempDir(), 'process-groups');
    const journal = new GroupJournal(dir);
    const name = journal.take();
    expect(name).toMatch(/^\d+-[0-9a-f]{12}\.jsonl$/);
    journal.record(name, '/c1/owner.json', [{ pid: 100, process_start: 's100' }]);
    journal.record(name, '/c2/owner.json', [{ pid: 200, process_start: 's200' }]);
    journal.record(name, '/c1/owner.json', [
      { pid: 100, process_start: 's100' },
      { pid: 101, process_start: 's101' },
    ]);
    journal.record(name, '/c1/owner.json', []);
    writeFileSync(join(dir, name), `${readFileSync(join(dir, name), 'utf8')}{"owner":"/c1/owner.json","gro`, { flag: 'w' });
    expect(withJournalGroups(dir, record(name), '/c1/owner.json')?.process_groups).toEqual([
      { pid: 4242, process_start: 'a' },
      { pid: 100, process_start: 's100' },
      { pid: 101, process_start: 's101' },
    ]);
    // A record without a journal, or naming one outside the folder, or one that is gone: as it is.
    expect(withJournalGroups(dir, record(), '/c1/owner.json')).toEqual(record());
    expect(withJournalGroups(dir, record('../../etc/passwd'), '/c1/owner.json')).toEqual(record('../../etc/passwd'));
    expect(withJournalGroups(dir, record('1-aaaaaaaaaaaa.jsonl'), '/c1/owner.json')).toEqual(record('1-aaaaaaaaaaaa.jsonl'));
    expect(withJournalGroups(dir, undefined, '/c1/owner.json')).toBeUndefined();
  });

  it('starts a new file past its size, removes an old one once no turn names it, and its own at a stop with none running', () => {
    const dir = join(tempDir(), 'process-groups');
    const journal = new GroupJournal(dir);
    const first = journal.take();
    const long = '/x'.repeat(2000);
    for (let i = 0; i < 300; i++) journal.record(first, long, [{ pid: 1000 + i, process_start: 's' }]);
    const second = journal.take();
    expect(second).not.toBe(first);
    // The first file is still named by a running turn, which still records there.
    journal.record(first, '/late/owner.json', [{ pid: 77, process_start: 's77' }]);
    expect(withJournalGroups(dir, record(first), '/late/owner.json')?.process_groups).toContainEqual({ pid: 77, process_start: 's77' });
    expect(readdirSync(dir).sort()).toEqual([first, second].sort());
    journal.release(first);
    journal.release(first);
    expect(readdirSync(dir)).toEqual([second]);
    // A turn running at the stop keeps its file; none running: it goes.
    journal.close();
    expect(existsSync(join(dir, second))).toBe(true);
    journal.release(second);
    expect(existsSync(join(dir, second))).toBe(false);
    const third = new GroupJournal(dir);
    const name = third.take();
    third.release(name);
    third.close();
    expect(existsSync(join(dir, name))).toBe(false);
  });
});
