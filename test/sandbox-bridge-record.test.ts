// The record of a long-lived process's sandbox bridges (bridge-record.ts), on real socat
// processes: a dead writer's bridges are stopped and its sockets removed; a live writer's, another
// machine's, and any path that is not one of the library's sockets are left alone.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { recordBridges, sweepDeadBridges } from '../src/exec/sandbox/bridge-record.js';
import { findBridgeProcesses } from '../src/exec/sandbox/socat.js';
import { tempDir } from './helpers/core-fixtures.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';
import { waitUntil } from './helpers/server-fixtures.js';

const DEAD = { pid: 2 ** 22 + 4321, process_start: 'linux:gone', host: hostname() };
const started: number[] = [];

afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Stopped by the sweep.
    }
  }
});

/** A real socat bridge listening on `socket`, as the sandbox library starts one. */
async function bridge(socket: string): Promise<number> {
  const child = spawn('socat', [`UNIX-LISTEN:${socket},fork,reuseaddr`, 'TCP:127.0.0.1:9'], { stdio: 'ignore', detached: true });
  child.unref();
  started.push(child.pid!);
  await waitUntil(() => existsSync(socket) || undefined, 10_000);
  return child.pid!;
}

function writeRecord(dir: string, name: string, record: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(record));
  return path;
}

describe.skipIf(skipSandbox)('sandbox bridge records', () => {
  it("stops a dead writer's socat and removes its sockets and record; a live or remote writer's stay", async () => {
    const dir = tempDir('atlas-bridges-');
    const tmp = tempDir('atlas-sock-');
    const http = join(tmp, 'claude-http-dead1.sock');
    const socks = join(tmp, 'claude-socks-dead1.sock');
    const deadHttp = await bridge(http);
    const deadSocks = await bridge(socks);
    // A bridge killed with its writer leaves its socket behind.
    const stale = join(tmp, 'claude-http-stale1.sock');
    process.kill(await bridge(stale), 'SIGKILL');
    await waitUntil(() => findBridgeProcesses([stale]).length === 0 || undefined, 10_000);
    const deadRecord = writeRecord(dir, `${DEAD.pid}.json`, { ...DEAD, sockets: [http, socks, stale] });
    // A dry run says what would be stopped and removed, and changes nothing.
    const dry = sweepDeadBridges(dir, { dryRun: true });
    expect(dry.processes.sort()).toEqual([deadHttp, deadSocks].sort());
    expect(dry.sockets.sort()).toEqual([http, socks, stale].sort());
    expect(findBridgeProcesses([http, socks]).sort()).toEqual([deadHttp, deadSocks].sort());
    expect(existsSync(deadRecord) && existsSync(stale)).toBe(true);
    const liveSocket = join(tmp, 'claude-http-live.sock');
    const live = await bridge(liveSocket);
    // As a server starts: the dead one's bridges stopped, then its own recorded.
    const swept = sweepDeadBridges(dir);
    const forget = recordBridges(dir, [liveSocket]);
    expect(swept.processes.sort()).toEqual([deadHttp, deadSocks].sort());
    // A socat that ends on SIGTERM removes its own socket: the sweep removes those it still finds.
    expect(swept.sockets).toContain(stale);
    expect([http, socks, stale]).toEqual(expect.arrayContaining(swept.sockets));
    expect(existsSync(deadRecord)).toBe(false);
    await waitUntil(() => findBridgeProcesses([http, socks]).length === 0 || undefined, 10_000);
    expect(existsSync(http) || existsSync(socks) || existsSync(stale)).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, `${process.pid}.json`), 'utf8'))).toMatchObject({ pid: process.pid, sockets: [liveSocket] });

    // Another machine's record (a shared home) and a live writer's are not swept here.
    const remoteSocket = join(tmp, 'claude-socks-remote.sock');
    const remote = await bridge(remoteSocket);
    writeRecord(dir, '77.json', { ...DEAD, pid: 77, host: `not-${hostname()}`, sockets: [remoteSocket] });
    expect(sweepDeadBridges(dir)).toEqual({ processes: [], sockets: [] });
    expect(findBridgeProcesses([liveSocket, remoteSocket]).sort()).toEqual([live, remote].sort());
    expect(readdirSync(dir).sort()).toEqual(['77.json', `${process.pid}.json`].sort());

    // The bridges stopped normally: the record goes.
    forget();
    expect(readdirSync(dir)).toEqual(['77.json']);
  });

  it('removes nothing a record names that is not one of the sandbox library’s sockets', async () => {
    const dir = tempDir('atlas-bridges-');
    const tmp = tempDir('atlas-sock-');
    // A user's socket and file under names the library never uses, and a library-named regular file.
    const theirs = join(tmp, 'agent.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(theirs, () => r()));
    const theirBridge = join(tmp, 'mine.sock');
    const other = await bridge(theirBridge);
    const plain = join(tmp, 'claude-http-plain.sock');
    writeFileSync(plain, 'not a socket');
    writeRecord(dir, `${DEAD.pid}.json`, { ...DEAD, sockets: [theirs, theirBridge, plain, 'claude-http-rel.sock', 42] });
    expect(sweepDeadBridges(dir)).toEqual({ processes: [], sockets: [] });
    expect(existsSync(theirs) && existsSync(plain)).toBe(true);
    expect(findBridgeProcesses([theirBridge])).toEqual([other]);
    // The record itself went: a dead writer has nothing more to sweep.
    expect(readdirSync(dir)).toEqual([]);
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('drops a broken record, ignores other files, and records nothing without sockets', () => {
    const dir = tempDir('atlas-bridges-');
    writeRecord(dir, '12.json', { pid: 'x' });
    writeFileSync(join(dir, '13.json'), '{"pid": 13, "host": "cut off by a cra');
    writeRecord(dir, 'notes.txt', {});
    writeRecord(dir, `.12.json.${process.pid}.tmp`, {});
    expect(sweepDeadBridges(dir)).toEqual({ processes: [], sockets: [] });
    expect(readdirSync(dir).sort()).toEqual([`.12.json.${process.pid}.tmp`, 'notes.txt']);
    recordBridges(dir, [])();
    expect(readdirSync(dir)).not.toContain(`${process.pid}.json`);
    expect(sweepDeadBridges(join(dir, 'missing'))).toEqual({ processes: [], sockets: [] });
  });
});
