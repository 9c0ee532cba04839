// Issue 19, defect 1: an agent and its sandbox die with the server that started them. A SIGKILLed
// server leaves no agent running (sandboxed and --local: at once, through the parent-death signal;
// issue 37 for --local), and `--recover` never runs a second agent beside the first. The agents'
// spawner is the Python one by default (the sandboxed case) and the Node.js one when
// server.spawner says so (the --local case): each dies with the server and takes its agent along.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';
import type { ServeProcess } from './helpers/server-fixtures.js';
import { auth, createToken, getJson, processesWith, readSse, serversOfThisFile, startServe, waitUntil } from './helpers/server-fixtures.js';

checkResponses();

/** A command agent that runs its prompt as a shell command. */
const SHELL_AGENT = ['-c', 'ai.agent=command', '-c', 'ai.command=eval "$ATLAS_PROMPT"'];

const servers = serversOfThisFile();

async function serve(home: string, args: string[], local: boolean, spawner = 'auto'): Promise<ServeProcess> {
  const s = await startServe(home, args, { flags: [...SHELL_AGENT, '-c', `server.spawner=${spawner}`], local });
  servers.push(s);
  return s;
}

/** The process's ancestors, nearest first, as pid and command line. */
function ancestors(pid: number): Array<{ pid: number; cmd: string }> {
  const out: Array<{ pid: number; cmd: string }> = [];
  for (let p = pid; p > 1; ) {
    const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
    p = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    out.push({ pid: p, cmd: readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ') });
  }
  return out;
}

/** The agent's spawner: the server's child that started it, not the server itself (issue 37). */
function spawnerOf(s: ServeProcess, marker: string, entry: string): number {
  const chain = ancestors(processesWith(marker)[0]!);
  const spawner = chain.find((a) => a.cmd.includes(entry));
  expect(spawner, JSON.stringify(chain.map((a) => `${a.pid} ${a.cmd.slice(0, 40)}`))).toBeDefined();
  expect(chain[chain.indexOf(spawner!) + 1]?.pid).toBe(s.child.pid);
  return spawner!.pid;
}

async function killMidTurn(s: ServeProcess, token: string, id: string, marker: string, entry: string): Promise<void> {
  const res = await fetch(`${s.url}/conversations/${id}/sandbox/${id}`, {
    method: 'POST',
    headers: auth(token),
    body: JSON.stringify({ prompt: `sleep ${marker}; echo finished > done.txt` }),
  });
  void readSse(res).catch(() => undefined);
  await waitUntil(() => (processesWith(marker).length > 0 ? true : undefined), 20_000, 'the agent to start');
  const spawner = spawnerOf(s, marker, entry);
  s.child.kill('SIGKILL');
  await s.exited;
  await waitUntil(() => (processesWith(entry).includes(spawner) ? undefined : true), 5_000, 'the spawner to die with its server');
}

describe('a killed server and its agent', () => {
  it.skipIf(skipSandbox)('sandboxed: the agent dies with the server, at once', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const marker = '31.4159';
    const s = await serve(home, [], false);
    await killMidTurn(s, token, 'boxed', marker, 'dist/spawner.py');
    await waitUntil(() => (processesWith(marker).length === 0 ? true : undefined), 5_000, 'the sandboxed agent to die with its server');
  });

  it("local: the agent's whole process group dies with the server, at once; --recover then runs one agent", async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const marker = '27.1828';
    const s = await serve(home, [], true, 'node');
    await killMidTurn(s, token, 'plain', marker, 'dist/spawner.cjs');
    // The parent-death signal reaches the spawner, which kills the turn's group (the agent's own
    // child, the sleep, too): nothing works on beside a replica that takes the turn over.
    await waitUntil(() => (processesWith(marker).length === 0 ? true : undefined), 5_000, 'the local agent to die with its server');
    const again = await serve(home, ['--recover'], true);
    await waitUntil(
      async () => ((await getJson(again.url, token, '/conversations/plain')).json.conversation.status !== 'running' ? true : undefined),
      30_000,
      'the recovery turn',
    );
  });
});
