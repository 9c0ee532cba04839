import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { conversationFiles } from '../src/conversation/paths.js';
import { ConversationRecorder } from '../src/conversation/recorder.js';
import { startHeartbeat } from '../src/liveness/owner.js';
import { keepingStatements } from '../src/server/state/open.js';
import { BackgroundFile, writeFileAtomicAsync } from '../src/store/atomic-write-async.js';
import { tempDir } from './helpers/core-fixtures.js';

describe('atomic writes off the event loop', () => {
  it('writeFileAtomicAsync replaces the file whole, private, with no temp file left', async () => {
    const dir = tempDir();
    const path = join(dir, 'conversation.json');
    writeFileSync(path, 'old');
    await writeFileAtomicAsync(path, 'new');
    await writeFileAtomicAsync(path, Buffer.from('newer'), { durable: false });
    expect(readFileSync(path, 'utf8')).toBe('newer');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['conversation.json']);
  });

  it('a failed write leaves the old file and no temp file', async () => {
    const dir = tempDir();
    const path = join(dir, 'taken');
    mkdirSync(path);
    await expect(writeFileAtomicAsync(path, 'x')).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(['taken']);
  });

  it('BackgroundFile keeps the newest content, folding saves made while a write runs', async () => {
    const dir = tempDir();
    const path = join(dir, 'record.json');
    const file = new BackgroundFile(path);
    for (let i = 0; i < 50; i++) file.save(`{"n":${i}}`, i === 10);
    await file.flushed();
    expect(readFileSync(path, 'utf8')).toBe('{"n":49}');
    expect(readdirSync(dir)).toEqual(['record.json']);
    file.save('{"n":50}', false);
    await file.flushed();
    expect(readFileSync(path, 'utf8')).toBe('{"n":50}');
  });

  it('BackgroundFile with settleMs: a save that need not be durable waits for later ones; a durable one, or flushed(), writes at once', async () => {
    const dir = tempDir();
    const path = join(dir, 'record.json');
    const file = new BackgroundFile(path, undefined, 60_000);
    file.save('{"n":1}', false);
    file.save('{"n":2}', false);
    await new Promise((done) => setTimeout(done, 20));
    expect(existsSync(path)).toBe(false);
    await file.flushed();
    expect(readFileSync(path, 'utf8')).toBe('{"n":2}');
    file.save('{"n":3}', false);
    file.save('{"n":4}', true);
    await new Promise<void>((done) => {
      const wait = () => (existsSync(path) && readFileSync(path, 'utf8') === '{"n":4}' ? done() : setTimeout(wait, 5));
      wait();
    });
    const short = new BackgroundFile(join(dir, 'short.json'), undefined, 1);
    short.save('{"n":5}', false);
    await new Promise<void>((done) => {
      const wait = () => (existsSync(join(dir, 'short.json')) ? done() : setTimeout(wait, 5));
      wait();
    });
    await short.flushed();
    expect(readFileSync(join(dir, 'short.json'), 'utf8')).toBe('{"n":5}');
  });

  it('BackgroundFile.flushed() says when a write failed', async () => {
    const dir = tempDir();
    const file = new BackgroundFile(join(dir, 'missing', 'record.json'));
    file.save('{}', true);
    await expect(file.flushed()).rejects.toThrow(/ENOENT/);
  });
});

describe('compiled statements kept per SQL text', () => {
  it('hands back the same statement for the same SQL, and drops the least recently used past its size', () => {
    const sqlite = new SQLite(':memory:');
    const db = keepingStatements(sqlite);
    const first = db.prepare('select 1 as one');
    expect(db.prepare('select 1 as one')).toBe(first);
    for (let i = 0; i < 256; i++) db.prepare(`select ${i + 2} as n`);
    expect(db.prepare('select 1 as one')).not.toBe(first);
    expect((db.prepare('select 1 as one') as unknown as { all: () => unknown[] }).all()).toEqual([{ one: 1 }]);
    db.close();
    expect(sqlite.open).toBe(false);
  });
});

describe('owner.json heartbeat writes', () => {
  const settings = { heartbeatIntervalMs: 60_000, staleThresholdMs: 180_000 };

  it('a claimed record is not written again; a new process group is on record at once, an ended one with the next write', () => {
    const path = join(tempDir(), 'owner.json');
    const claimedText = '{"claimed":true}\n';
    writeFileSync(path, claimedText);
    const claimed = {
      pid: process.pid,
      host: 'h',
      process_start: 's',
      started_at: '2026-11-26T00:00:00Z',
      heartbeat_at: '2026-11-26T00:00:00Z',
      heartbeat_interval_ms: 60_000,
      stale_threshold_ms: 180_000,
    };
    const heartbeat = startHeartbeat(path, settings, claimed);
    expect(readFileSync(path, 'utf8')).toBe(claimedText);
    heartbeat.setProcessGroups([process.pid]);
    expect(JSON.parse(readFileSync(path, 'utf8')).process_groups).toEqual([{ pid: process.pid, process_start: expect.any(String) }]);
    heartbeat.setProcessGroups([]);
    // Still listed: a group that is gone is never signalled (its start identity is checked).
    expect(JSON.parse(readFileSync(path, 'utf8')).process_groups).toHaveLength(1);
    heartbeat.stop();
    expect(existsSync(path)).toBe(false);
  });
});

function recorder(dir: string, extra: Partial<ConstructorParameters<typeof ConversationRecorder>[0]> = {}) {
  return new ConversationRecorder({
    taskDir: dir,
    taskId: 'task-1',
    stepName: 'implement',
    attempt: 1,
    agent: 'claude',
    model: '',
    continues: null,
    ...extra,
  });
}

describe('a recorder writing in the background (a server)', () => {
  it('makes its folder and first record from the thread pool, folds later writes, appends messages in order, all on disk once flushed', async () => {
    const dir = tempDir();
    const rec = recorder(dir, { background: true });
    const files = conversationFiles(dir, rec.id);
    // Nothing is written on the calling thread: the folder comes with the first write.
    expect(existsSync(files.dir)).toBe(false);
    const message = (key: string) => ({
      key,
      conversation_id: rec.id,
      body: key,
      role: 1 as const,
      timestamp: 1,
      tokens: 0,
      tool_calls: [],
    });
    rec.recordMessage(message('m1'));
    rec.recordMessage(message('m2'));
    await rec.flushed();
    expect(JSON.parse(readFileSync(files.record, 'utf8'))).toMatchObject({ id: rec.id, status: 'running' });
    rec.setSession('session-1');
    rec.setModel('claude-x');
    rec.recordMessage(message('m3'));
    // Once messages.jsonl is open, each message is on disk as it comes: a crash loses at most the one in flight.
    expect(readFileSync(files.messages, 'utf8').trim().split('\n')).toHaveLength(3);
    rec.finish('completed');
    // Ended: nothing more is appended.
    rec.recordMessage(message('m4'));
    await rec.flushed();
    expect(JSON.parse(readFileSync(files.record, 'utf8'))).toMatchObject({
      session_id: 'session-1',
      model: 'claude-x',
      status: 'completed',
    });
    const keys = readFileSync(files.messages, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).key);
    expect(keys).toEqual(['m1', 'm2', 'm3']);
  });

  it('in the background, a folder that cannot be made fails flushed(), not the caller', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'conversations'), 'a file where the folder goes');
    const rec = recorder(dir, { background: true });
    rec.recordMessage({ key: 'm1', conversation_id: rec.id, body: 'x', role: 1, timestamp: 1, tokens: 0, tool_calls: [] });
    rec.finish('failed');
    await expect(rec.flushed()).rejects.toThrow(/EEXIST|ENOTDIR/);
  });

  it('a synchronous recorder is flushed at once', async () => {
    const rec = recorder(tempDir());
    await expect(rec.flushed()).resolves.toBeUndefined();
  });
});
