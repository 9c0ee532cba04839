// The process groups a server's turns start, recorded in one file per server process instead of
// in each turn's owner.json: an append to a file that exists costs microseconds, where rewriting
// owner.json whole (a temp file renamed over it) created a file per turn, 0.04 to 0.6 ms of system
// time on a busy disk. A turn's owner.json names the file (`process_groups_file`); whoever takes
// over from a dead owner reads that owner's lines and stops the groups still running (recovery/
// leftovers.ts signals only a leader whose start identity matches, so a line of a group that has
// ended since is harmless). Lines are only added: each names an owner.json and its live groups.

import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { writeAllSync } from '../store/atomic-write.js';
import type { OwnerRecord, ProcessGroupRecord } from './owner.js';

/** A journal's name, as owner.json gives it (a record is read as untrusted: nothing outside the folder is opened). */
const NAME = /^\d+-[0-9a-f]{12}\.jsonl$/;

/** Past this size the next claim starts a new file; the old one goes once no turn names it. */
const ROTATE_BYTES = 1 << 20;

export class GroupJournal {
  private current: { name: string; fd: number; bytes: number } | undefined;
  /** Turns whose owner.json names each file, so a file is removed only once none does. */
  private readonly users = new Map<string, number>();

  constructor(readonly dir: string) {}

  /** The file a turn claimed now records its groups in; give it back with release(). */
  take(): string {
    if (!this.current || this.current.bytes >= ROTATE_BYTES) this.start();
    const name = this.current!.name;
    this.users.set(name, (this.users.get(name) ?? 0) + 1);
    return name;
  }

  /** Appends the live groups of the turn whose owner.json is at `owner`. */
  record(name: string, owner: string, groups: readonly ProcessGroupRecord[]): void {
    if (groups.length === 0) return;
    if (this.current?.name === name) this.current.bytes += append(this.current.fd, owner, groups);
    else this.recordElsewhere(name, owner, groups);
  }

  /** The turn is over: its file goes once no turn names it and it is no longer the current one. */
  release(name: string): void {
    const left = (this.users.get(name) ?? 1) - 1;
    if (left > 0) return void this.users.set(name, left);
    this.users.delete(name);
    if (this.current?.name !== name) remove(join(this.dir, name));
  }

  /** The server stops with no turn running: its file goes. */
  close(): void {
    if (!this.current) return;
    closeSync(this.current.fd);
    if (!this.users.has(this.current.name)) remove(join(this.dir, this.current.name));
    this.current = undefined;
  }

  private start(): void {
    const previous = this.current;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const name = `${process.pid}-${randomBytes(6).toString('hex')}.jsonl`;
    this.current = { name, fd: openSync(join(this.dir, name), 'a', 0o600), bytes: 0 };
    if (previous) {
      closeSync(previous.fd);
      if (!this.users.has(previous.name)) remove(join(this.dir, previous.name));
    }
  }

  /** A turn that started before a rotation still writes to its own file. */
  private recordElsewhere(name: string, owner: string, groups: readonly ProcessGroupRecord[]): void {
    if (!NAME.test(name)) return;
    const fd = openSync(join(this.dir, name), 'a', 0o600);
    try {
      append(fd, owner, groups);
    } finally {
      closeSync(fd);
    }
  }
}

function append(fd: number, owner: string, groups: readonly ProcessGroupRecord[]): number {
  return writeAllSync(fd, `${JSON.stringify({ owner, groups })}\n`);
}

function remove(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Gone already.
  }
}

/**
 * `record` (a dead owner's owner.json at `owner`) with the process groups its journal in `dir`
 * has for it added to those it names itself: what must be stopped before its turn is taken over.
 */
export function withJournalGroups(dir: string, record: OwnerRecord | undefined, owner: string): OwnerRecord | undefined {
  const name = record?.process_groups_file;
  if (!record || typeof name !== 'string' || !NAME.test(name)) return record;
  const groups = new Map((record.process_groups ?? []).map((g) => [`${g.pid}:${g.process_start}`, g]));
  let text = '';
  try {
    // A journal is bounded (ROTATE_BYTES and a turn's last lines): read whole.
    if (statSync(join(dir, name)).size > 4 * ROTATE_BYTES) return record;
    text = readFileSync(join(dir, name), 'utf8');
  } catch {
    return record;
  }
  for (const line of text.split('\n')) {
    if (!line.includes(owner)) continue;
    try {
      const entry = JSON.parse(line) as { owner?: unknown; groups?: unknown };
      if (entry.owner !== owner || !Array.isArray(entry.groups)) continue;
      for (const g of entry.groups as ProcessGroupRecord[])
        if (Number.isInteger(g?.pid) && g.pid > 1 && typeof g.process_start === 'string') groups.set(`${g.pid}:${g.process_start}`, g);
    } catch {
      // A line cut by a crash mid-write (one write per line): its group goes unstopped, as a record
      // cut before its rename would.
    }
  }
  return groups.size > 0 ? { ...record, process_groups: [...groups.values()] } : record;
}
