// A SIGKILLed sandboxed `atlas serve` leaves the sandbox's network bridges (socat, started with the
// server as parent) serving sockets nobody can use. The next server of the same home stops them
// when it starts, sandboxed or --local, and so does `atlas cleanup`; a server that stops normally
// leaves no record.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findBridgeProcesses } from '../src/exec/sandbox/socat.js';
import { atlas, tempDir } from './helpers/core-fixtures.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';
import type { ServeProcess } from './helpers/server-fixtures.js';
import { AGENT_FLAGS, createToken, prompt, serversOfThisFile, startServe, waitUntil } from './helpers/server-fixtures.js';

const servers = serversOfThisFile();

async function serve(home: string, local: boolean): Promise<ServeProcess> {
  const s = await startServe(home, [], { flags: AGENT_FLAGS, local });
  servers.push(s);
  return s;
}

function bridgesDir(home: string): string {
  return join(home, 'server', 'sandbox-bridges');
}

/** The sockets a server recorded, and the socat processes serving them. */
function recorded(home: string, pid: number): { sockets: string[]; bridges: number[] } {
  const { sockets } = JSON.parse(readFileSync(join(bridgesDir(home), `${pid}.json`), 'utf8')) as { sockets: string[] };
  return { sockets, bridges: findBridgeProcesses(sockets) };
}

async function killed(s: ServeProcess): Promise<void> {
  s.child.kill('SIGKILL');
  await s.exited;
}

describe.skipIf(skipSandbox)('the bridges of a killed sandboxed server', () => {
  it('outlive it, and the next server stops them and removes their sockets; a normal stop leaves no record', async () => {
    const home = tempDir();
    const first = await serve(home, false);
    const token = createToken(home, 'alice');
    expect((await prompt(first.url, token, 'c1', { prompt: 'hello' })).events.at(-1)!.data.ok).toBe(true);
    const before = recorded(home, first.child.pid!);
    expect(before.sockets.length).toBeGreaterThan(0);
    expect(before.bridges).toHaveLength(before.sockets.length);
    await killed(first);
    // Nothing stops them with their parent: they serve on (what used to pile up on every machine).
    expect(findBridgeProcesses(before.sockets).sort()).toEqual(before.bridges.sort());

    const second = await serve(home, false);
    await waitUntil(() => findBridgeProcesses(before.sockets).length === 0 || undefined, 10_000);
    expect(before.sockets.some((s) => existsSync(s))).toBe(false);
    const line = second.lines.map((l) => JSON.parse(l)).find((e) => e.msg === "stopped a dead server's sandbox bridges");
    expect(line.processes.sort()).toEqual(before.bridges.sort());
    expect(readdirSync(bridgesDir(home))).toEqual([`${second.child.pid}.json`]);
    const own = recorded(home, second.child.pid!);
    expect(own.bridges).toHaveLength(own.sockets.length);

    // A graceful stop ends its bridges and removes its record.
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(readdirSync(bridgesDir(home))).toEqual([]);
    await waitUntil(() => findBridgeProcesses(own.sockets).length === 0 || undefined, 10_000);
  });

  it('atlas cleanup stops them too, and with --dry-run only says so', async () => {
    const home = tempDir();
    const first = await serve(home, false);
    const before = recorded(home, first.child.pid!);
    await killed(first);
    const dry = await atlas(['cleanup', '--dry-run', '--json'], { env: { ATLAS_HOME: home } });
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout).server_bridges_removed.processes.sort()).toEqual(before.bridges.sort());
    expect(findBridgeProcesses(before.sockets).sort()).toEqual(before.bridges.sort());
    expect(readdirSync(bridgesDir(home))).toEqual([`${first.child.pid}.json`]);
    const text = await atlas(['cleanup'], { env: { ATLAS_HOME: home } });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`Sandbox bridges of a killed server stopped: ${before.bridges.length} socat process(es)`);
    await waitUntil(() => findBridgeProcesses(before.sockets).length === 0 || undefined, 10_000);
    expect(readdirSync(bridgesDir(home))).toEqual([]);
  });

  it('a --local server started after a killed sandboxed one stops its bridges too', async () => {
    const home = tempDir();
    const first = await serve(home, false);
    const before = recorded(home, first.child.pid!);
    await killed(first);
    const local = await serve(home, true);
    await waitUntil(() => findBridgeProcesses(before.sockets).length === 0 || undefined, 10_000);
    expect(local.lines.some((l) => l.includes("stopped a dead server's sandbox bridges"))).toBe(true);
    expect(readdirSync(bridgesDir(home))).toEqual([]);
  });
});
