// The server state layer (src/server/state): where and how the embedded SQLite file is kept, waiting
// out a busy database, damaged rows, and an unreachable or restarted PostgreSQL.
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../src/domain/redact-url.js';
import { followLog } from '../src/server/state/follow.js';
import { databaseUrl, openState, stateFilePath, whenNotBusy } from '../src/server/state/open.js';
import { postgresSkipReason } from './helpers/postgres.js';
import { conversation, newHome, pgServer, useStateServers, waitFor } from './helpers/server-state-fixtures.js';

useStateServers();

describe('server state: the embedded file and failures', () => {
  it('keeps SQLite in $ATLAS_HOME/server/state.db, mode 0600, in WAL mode', async () => {
    const home = newHome();
    const state = await openState({ home, url: '' });
    await state.close();
    expect(statSync(stateFilePath(home)).mode & 0o777).toBe(0o600);
    const raw = new Database(stateFilePath(home), { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('waits for another process that holds the write lock past busy_timeout, instead of failing to open', async () => {
    const home = newHome();
    await (await openState({ home, url: '' })).close();
    // Another process on this home holds the write lock for 6 s (busy_timeout is 5 s).
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(${JSON.stringify(stateFilePath(home))}); db.exec('BEGIN IMMEDIATE'); console.log('locked'); setTimeout(() => db.exec('COMMIT'), 6000);`,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((r) => holder.on('close', r));
    await new Promise((r) => holder.stdout.once('data', r));
    const started = Date.now();
    const state = await openState({ home, url: '' });
    expect(Date.now() - started).toBeGreaterThan(5000);
    await state.putConversation(conversation('alice', 'c1', '2026-11-25T10:00:00.000Z'));
    expect((await state.getConversation('alice', 'c1'))?.id).toBe('c1');
    await state.close();
    await exited;
  }, 30_000);

  it('tries a busy step again until its time is up, and any other failure at once', async () => {
    const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    let calls = 0;
    await expect(
      whenNotBusy(
        () =>
          ++calls < 3
            ? (() => {
                throw busy();
              })()
            : 'open',
        5_000,
      ),
    ).resolves.toBe('open');
    expect(calls).toBe(3);
    const started = Date.now();
    await expect(
      whenNotBusy(() => {
        throw busy();
      }, 300),
    ).rejects.toThrow('database is locked');
    expect(Date.now() - started).toBeLessThan(2_000);
    calls = 0;
    await expect(
      whenNotBusy(() => {
        calls++;
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      }),
    ).rejects.toThrow('disk I/O error');
    expect(calls).toBe(1);
  });

  it('refuses a damaged row with the table it is in', async () => {
    const home = newHome();
    const state = await openState({ home, url: undefined });
    await state.putConversation(conversation('alice', 'c1', '2026-11-25T10:00:00.000Z'));
    const raw = new Database(stateFilePath(home));
    raw.prepare("update conversations set models = 'not json'").run();
    raw.close();
    await expect(state.getConversation('alice', 'c1')).rejects.toThrow(/a row of conversations is not valid \(models is not JSON\)/);
    await state.close();
  });

  it('says which database it cannot reach, never with its password', async () => {
    const url = 'postgres://atlas:s3cret-pass@127.0.0.1:1/atlas';
    expect(redactUrl(url)).toBe('postgres://atlas:***@127.0.0.1:1/atlas');
    expect(redactUrl('postgres://127.0.0.1/atlas')).toBe('postgres://127.0.0.1/atlas');
    expect(databaseUrl('', { ATLAS_DATABASE_URL: url })).toBe(url);
    expect(databaseUrl(' postgres://x/y ', { ATLAS_DATABASE_URL: url })).toBe('postgres://x/y');
    const error = await openState({ home: newHome(), url }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/server state at postgres:\/\/atlas:\*\*\*@127\.0\.0\.1:1\/atlas/);
    expect(error?.message).not.toContain('s3cret-pass');
  });

  it.skipIf(postgresSkipReason !== undefined)(
    'fails while PostgreSQL is down (a follower reports it and keeps its place) and works again once it is back',
    async () => {
      const url = await pgServer!.createDatabase('downtime');
      const state = await openState({ home: newHome(), url });
      const seen: number[] = [];
      const errors: Error[] = [];
      const follower = followLog(state, 'log', 0, (e) => seen.push(e.id), { intervalMs: 20, onError: (e) => errors.push(e) });
      try {
        expect((await state.appendEvent('log', 'a', {})).id).toBe(1);
        await waitFor(() => seen.length === 1);
        pgServer!.kill();
        await expect(state.appendEvent('log', 'b', {})).rejects.toThrow();
        // The follower reports the failed polls and keeps its place.
        await waitFor(() => errors.length > 0);
        pgServer!.start();
        expect((await state.appendEvent('log', 'c', {})).id).toBe(2);
        await waitFor(() => seen.length === 2);
        expect(seen).toEqual([1, 2]);
      } finally {
        follower.stop();
        await state.close();
      }
    },
  );
});
