// The server's event log (issue 19, defects 7 and 8): ids unique and increasing across processes
// sharing one ATLAS_HOME, continued after a conversation is deleted and made again, and reads after
// an id that do not depend on re-reading the whole file.
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventLog, EventLogs, retireLog } from '../src/server/event-log.js';
import { readEventsAfter, readTail } from '../src/server/event-log-file.js';
import { compileFixture } from './helpers/compile-fixture.js';
import { tempDir } from './helpers/core-fixtures.js';

const ids = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { id: number }).id);

function appender(fixture: string, path: string, n: number, startAt: number): Promise<number> {
  const child = spawn(process.execPath, [fixture, path, String(n), String(startAt)], { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
}

describe('event ids', () => {
  it('three processes appending to one log at once hand out every id once, in order', async () => {
    const dir = join(tempDir(), 'conv');
    mkdirSync(dir);
    const path = join(dir, 'events.jsonl');
    const fixture = await compileFixture('test/fixtures/server/event-appender.ts');
    const startAt = Date.now() + 1500;
    const codes = await Promise.all([appender(fixture, path, 150, startAt), appender(fixture, path, 150, startAt), appender(fixture, path, 150, startAt)]);
    expect(codes).toEqual([0, 0, 0]);
    expect(ids(path)).toEqual(Array.from({ length: 450 }, (_, i) => i + 1));
  }, 60_000);

  it('a log made again after its folder was removed goes on from the last id; a torn tail is skipped', () => {
    const root = tempDir();
    const path = join(root, 'conv', 'events.jsonl');
    mkdirSync(join(root, 'conv'));
    const first = new EventLog(path);
    for (let i = 0; i < 3; i++) first.append('message', { i });
    retireLog(path);
    rmSync(join(root, 'conv'), { recursive: true });
    mkdirSync(join(root, 'conv'));
    const again = new EventLogs().get(path);
    expect(again.lastId).toBe(3);
    expect(again.append('message', {}).id).toBe(4);
    // A writer killed mid-line: the next append starts a line of its own with the next id.
    appendFileSync(path, '{"id":5,"type":"mess');
    expect(readTail(path)).toEqual({ lastId: 4, torn: true });
    expect(again.append('message', {}).id).toBe(5);
    expect(readEventsAfter(path, 0).map((e) => e.id)).toEqual([4, 5]);
    retireLog(path);
    expect(readFileSync(join(root, '.retired-event-ids', 'conv'), 'utf8').trim()).toBe('5');
  });

  it('a lock left by a killed process is taken over', () => {
    const dir = join(tempDir(), 'conv');
    mkdirSync(join(dir, 'events.jsonl.lock'), { recursive: true });
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(dir, 'events.jsonl.lock'), old, old);
    expect(new EventLog(join(dir, 'events.jsonl')).append('x', {}).id).toBe(1);
  });
});

describe('reading after an id', () => {
  it('finds the events after any id in a large log, with long and multi-byte lines, as a full read does', () => {
    const dir = tempDir();
    const path = join(dir, 'events.jsonl');
    const lines: string[] = [];
    for (let id = 1; id <= 5000; id++) lines.push(JSON.stringify({ id, type: 'output', at: 'x', data: { text: id % 997 === 0 ? 'ü'.repeat(70_000) : '€'.repeat(id % 40) } }));
    writeFileSync(path, `${lines.join('\n')}\n`);
    for (const after of [0, 1, 996, 997, 2500, 4999, 5000, 7000]) {
      const got = readEventsAfter(path, after);
      expect(got.map((e) => e.id)).toEqual(Array.from({ length: Math.max(0, 5000 - after) }, (_, i) => after + i + 1));
    }
    expect(readTail(path)).toEqual({ lastId: 5000, torn: false });
    // A last line longer than any read chunk.
    appendFileSync(path, `${JSON.stringify({ id: 5001, type: 'output', at: 'x', data: { text: 'ß'.repeat(200_000) } })}\n`);
    expect(readTail(path).lastId).toBe(5001);
    expect(readEventsAfter(path, 5000).map((e) => e.id)).toEqual([5001]);
    expect(readEventsAfter(join(dir, 'missing.jsonl'), 0)).toEqual([]);
    expect(readTail(join(dir, 'missing.jsonl'))).toEqual({ lastId: 0, torn: false });
  });
});
