// Server tests: `atlas serve` started as a real child process on 127.0.0.1 (port 0: the bound port
// is read from its "listening" log line), or in-process with startServer for coverage; tokens made
// with the real CLI; SSE read with fetch and eventsource-parser.

import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';
import { afterEach, beforeAll } from 'vitest';
import { ATLAS_BIN, atlasSync, REPO_ROOT } from './core-fixtures.js';
import { ensureBuilt } from './engine-fixtures.js';
import { checkSseEvent } from './openapi-check.js';

export const STREAM_AGENT = join(REPO_ROOT, 'test', 'fixtures', 'server', 'stream-agent.mjs');
export const AGENT_FLAGS = ['-c', 'ai.agent=command', '-c', `ai.command=${process.execPath} ${STREAM_AGENT}`];

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: any;
}

export interface ServeProcess {
  child: ChildProcess;
  port: number;
  url: string;
  /** Every stdout line so far (JSON log lines). */
  lines: string[];
  stderr: () => string;
  exited: Promise<number | null>;
}

export function createToken(home: string, account: string): string {
  const r = atlasSync(['--json', 'serve', 'token', 'create', '--account', account], { env: { ATLAS_HOME: home } });
  if (r.code !== 0) throw new Error(`token create failed: ${r.stderr}`);
  return JSON.parse(r.stdout).token as string;
}

/** Starts `atlas serve --port 0` (with --local unless `local: false`) and waits for its listening line. */
export function startServe(
  home: string,
  args: string[] = [],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; flags?: string[]; local?: boolean } = {},
): Promise<ServeProcess> {
  const local = options.local === false ? [] : ['--local'];
  const child = spawn(process.execPath, [ATLAS_BIN, ...(options.flags ?? AGENT_FLAGS), 'serve', '--port', '0', ...local, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ATLAS_HOME: home, ...options.env },
  });
  const lines: string[] = [];
  let stderr = '';
  let partial = '';
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`atlas serve did not start: ${stderr}`)), 20_000);
    child.stdout.on('data', (d) => {
      partial += d;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        try {
          const entry = JSON.parse(line);
          if (entry.msg === 'listening') {
            clearTimeout(timer);
            resolve({ child, port: entry.port, url: entry.url, lines, stderr: () => stderr, exited });
          }
        } catch {
          // not JSON
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`atlas serve exited ${code}: ${stderr}`));
    });
  });
}

export function auth(token: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...extra };
}

/** Reads an SSE response to its end (or until `stopAfter` says so, then aborts). */
export async function readSse(response: Response, stopAfter?: (e: SseEvent) => boolean, abort?: AbortController): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  let stop = false;
  const parser = createParser({
    onEvent(e) {
      if (stop) return;
      const event = { id: e.id, event: e.event ?? 'message', data: JSON.parse(e.data) };
      checkSseEvent(event);
      events.push(event);
      if (stopAfter?.(event)) stop = true;
    },
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      if (stop) {
        abort?.abort();
        await reader.cancel().catch(() => undefined);
        break;
      }
    }
  } catch (error) {
    if (!stop) throw error;
  }
  return events;
}

/** One prompt: POST and read the stream to its usage event. */
export async function prompt(
  url: string,
  token: string,
  conversation: string,
  body: Record<string, unknown>,
  sandbox = 'sb1',
): Promise<{ status: number; events: SseEvent[]; json?: any }> {
  const res = await fetch(`${url}/conversations/${conversation}/sandbox/${sandbox}`, {
    method: 'POST',
    headers: auth(token),
    body: JSON.stringify(body),
  });
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) return { status: res.status, events: [], json: await res.json() };
  return { status: res.status, events: await readSse(res) };
}

export async function getJson(url: string, token: string, path: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, { headers: auth(token) });
  return { status: res.status, json: await res.json() };
}

export async function waitUntil<T>(
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A template with a command, a validation, a human approval and a last command. */
export const TEMPLATE = `name: quick
branch_prefix: quick/
steps:
  - name: build
    type: command
    run: node -e "console.log('hello-from-task')"
  - name: validate
    type: validation
    commands: ['node -e "process.exit(0)"']
  - name: approve
    type: human
    prompt: "Ship it?"
  - name: finish
    type: command
    run: node -e "console.log('after approval')"
`;

/** A git repository `name` inside `root` with the template as .atlas/templates/quick.yaml. */
export function repoIn(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, '.atlas', 'templates'), { recursive: true });
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'dev@example.com');
  git('config', 'user.name', 'Dev');
  git('config', 'commit.gpgsign', 'false');
  writeFileSync(join(dir, '.atlas', 'templates', 'quick.yaml'), TEMPLATE);
  writeFileSync(join(dir, 'README.md'), '# demo\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'initial');
  return dir;
}

/** A template `slow` whose one step waits 30 s the first time only, and is safe to run again. */
export function addSlowTemplate(repo: string, root: string): void {
  writeFileSync(
    join(repo, '.atlas', 'templates', 'slow.yaml'),
    `name: slow\nbranch_prefix: slow/\nsteps:\n  - name: wait\n    type: command\n    idempotent: true\n    run: node -e "const f=require('fs'); if (!f.existsSync('${root}/ran')) { f.writeFileSync('${root}/ran', '1'); setTimeout(() => {}, 30000) }"\n`,
  );
  execFileSync('git', ['add', '-A'], { cwd: repo });
  execFileSync('git', ['commit', '-q', '-m', 'slow'], { cwd: repo });
}

/**
 * For a test file that starts servers: builds the CLI first, and stops every server pushed on the
 * returned list after each test (with `signal`, then waits for it to exit).
 */
export function serversOfThisFile(signal: NodeJS.Signals = 'SIGKILL'): ServeProcess[] {
  const servers: ServeProcess[] = [];
  beforeAll(() => ensureBuilt());
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      if (s.child.exitCode === null) s.child.kill(signal);
      await s.exited.catch(() => undefined);
    }
  });
  return servers;
}

/** Reads a turn's stream to its end; `started` resolves at its first message (the agent is at work). */
export function readTurn(response: Response): { started: Promise<void>; events: Promise<SseEvent[]> } {
  let started: () => void = () => undefined;
  const first = new Promise<void>((r) => (started = r));
  const events = readSse(response, (e) => {
    if (e.event === 'message') started();
    return false;
  });
  return { started: first, events };
}

/** Live processes (not zombies) whose command line holds `marker`, anywhere on this machine. */
export function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (cmd.includes(marker) && state.charAt(state.lastIndexOf(')') + 2) !== 'Z') out.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}
