// Shared fixtures for engine tests: a built CLI, temp git repositories, a temp ATLAS_HOME, running
// `node bin/atlas.cjs` for real, and a scripted stand-in for Claude Code.

import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'bin', 'atlas.cjs');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is missing or older than src/ (so a single test file can run alone). */
export function ensureBuilt(): void {
  const dist = join(ROOT, 'dist', 'cli.js');
  if (existsSync(dist) && statSync(dist).mtimeMs >= newestMtime(join(ROOT, 'src'))) return;
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore' });
}

export interface Sandbox {
  base: string;
  home: string;
  repo: string;
  bin: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Atlas Test',
  GIT_AUTHOR_EMAIL: 'atlas@example.com',
  GIT_COMMITTER_NAME: 'Atlas Test',
  GIT_COMMITTER_EMAIL: 'atlas@example.com',
  GIT_CONFIG_NOSYSTEM: '1',
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...GIT_ENV } }).trim();
}

/** A temp ATLAS_HOME and a git repository holding `files` in one commit. */
export function sandbox(files: Record<string, string> = {}): Sandbox {
  const base = mkdtempSync(join(tmpdir(), 'atlas-engine-'));
  const home = join(base, 'home');
  const repo = join(base, 'repo');
  const bin = join(base, 'bin');
  mkdirSync(repo);
  mkdirSync(bin);
  git(repo, 'init', '-q', '-b', 'main');
  writeFiles(repo, { 'README.md': '# fixture\n', ...files });
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'init');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...GIT_ENV,
    ATLAS_HOME: home,
    PATH: `${bin}:${process.env['PATH'] ?? ''}`,
    NO_COLOR: '1',
    // Keep npm quiet and offline in fixtures.
    npm_config_update_notifier: 'false',
  };
  for (const key of Object.keys(env)) if (key.startsWith('ATLAS_') && key !== 'ATLAS_HOME') delete env[key];
  return { base, home, repo, bin, env, cleanup: () => rmSync(base, { recursive: true, force: true }) };
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

export interface AtlasResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function startAtlas(sb: Sandbox, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? sb.repo,
    env: { ...sb.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export function finished(child: ChildProcess): Promise<AtlasResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

export function atlas(sb: Sandbox, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<AtlasResult> {
  return finished(startAtlas(sb, args, options));
}

export interface TaskOnDisk {
  id: string;
  dir: string;
  hook: any;
  task: any;
}

/** Every task under the sandbox's ATLAS_HOME, oldest first. */
export function tasks(sb: Sandbox): TaskOnDisk[] {
  const found: TaskOnDisk[] = [];
  const root = join(sb.home, 'workspaces');
  if (!existsSync(root)) return found;
  for (const ws of readdirSync(root)) {
    const tasksDir = join(root, ws, 'tasks');
    if (!existsSync(tasksDir)) continue;
    for (const id of readdirSync(tasksDir)) {
      const dir = join(tasksDir, id);
      found.push({
        id,
        dir,
        hook: JSON.parse(readFileSync(join(dir, 'hook.json'), 'utf8')),
        task: JSON.parse(readFileSync(join(dir, 'task.json'), 'utf8')),
      });
    }
  }
  return found.sort((a, b) => (a.id < b.id ? -1 : 1));
}

export function onlyTask(sb: Sandbox): TaskOnDisk {
  const all = tasks(sb);
  if (all.length !== 1) throw new Error(`expected one task, found ${all.length}`);
  return all[0]!;
}

/** [from → to (trigger)] of every history event, for exact comparisons. */
/** State changes only: events that record something within a state (receipts) are left out. */
export function transitions(hook: any): string[] {
  return hook.history
    .filter((e: any) => e.from_state !== e.to_state)
    .map((e: any) => `${e.from_state || '∅'} → ${e.to_state} (${e.trigger})`);
}

/**
 * Installs a scripted `claude` on the sandbox's PATH. It logs its argv (one JSON line per run) to
 * $FAKE_CLAUDE_LOG, writes `fixed.txt` in its cwd with a Write tool call, and prints stream-json
 * events. FAKE_CLAUDE_FAIL_FRESH=1 makes runs without --resume fail after the session starts;
 * FAKE_CLAUDE_EXIT_AFTER=N makes a run do its work, then report an error and exit N.
 */
export function installFakeClaude(sb: Sandbox): { log: string } {
  const log = join(sb.base, 'claude-argv.log');
  const script = `#!/usr/bin/env node
const fs = require('node:fs');
const path = require('node:path');
const argv = process.argv.slice(2);
fs.appendFileSync(process.env.FAKE_CLAUDE_LOG, JSON.stringify(argv) + '\\n');
const resumeAt = argv.indexOf('--resume');
const session = resumeAt >= 0 ? argv[resumeAt + 1] : 'sess-' + process.pid;
const emit = (event) => process.stdout.write(JSON.stringify(event) + '\\n');
emit({ type: 'system', subtype: 'init', session_id: session, cwd: process.cwd(), model: 'fake', tools: ['Write', 'Edit'] });
if (process.env.FAKE_CLAUDE_FAIL_FRESH && resumeAt < 0) {
  emit({ type: 'assistant', message: { content: [{ type: 'text', text: 'Starting, then failing on purpose.' }] }, session_id: session });
  process.stderr.write('fake claude: failing on purpose\\n');
  process.exit(1);
}
const file = path.join(process.cwd(), 'fixed.txt');
emit({ type: 'assistant', message: { content: [{ type: 'text', text: 'Looking at the bug.' }, { type: 'tool_use', id: 't1', name: 'Write', input: { file_path: file, content: 'fixed\\n' } }] }, session_id: session });
fs.writeFileSync(file, 'fixed\\n');
emit({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] }, session_id: session });
// An edit the tool reports but that leaves no trace in git: only the stream can tell atlas about it.
emit({ type: 'assistant', message: { content: [{ type: 'tool_use', id: 't2', name: 'Edit', input: { file_path: path.join(process.cwd(), 'notes', 'plan.md'), old_string: 'a', new_string: 'b' } }] }, session_id: session });
emit({ type: 'assistant', message: { content: [{ type: 'text', text: 'Done: wrote fixed.txt.' }] }, session_id: session });
if (process.env.FAKE_CLAUDE_EXIT_AFTER) {
  emit({ type: 'result', subtype: 'error_during_execution', is_error: true, result: 'gave up', session_id: session });
  process.exit(Number(process.env.FAKE_CLAUDE_EXIT_AFTER));
}
emit({ type: 'result', subtype: 'success', is_error: false, result: 'Fixed it by writing fixed.txt.', session_id: session, total_cost_usd: 0.0123, usage: { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 5, cache_read_input_tokens: 7 } });
`;
  const path = join(sb.bin, 'claude');
  writeFileSync(path, script);
  chmodSync(path, 0o755);
  sb.env['FAKE_CLAUDE_LOG'] = log;
  writeFileSync(log, '');
  return { log };
}

export function readLines(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitFor(check: () => boolean, timeoutMs = 15_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
