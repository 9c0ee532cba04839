// Crash injection against the real CLI: a repository with slow templates, `atlas start` as a child
// process, polling hook.json for the moment to kill, SIGKILL, and the checks every kill must pass
// (hook.json parses, history kept, no file lost).

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect } from 'vitest';
import type { Hook, HookEvent } from '../../src/domain/hook.js';
import { parseHook } from '../../src/domain/hook-schema.js';
import type { CliResult } from './core-fixtures.js';
import { ATLAS_BIN, atlas, git, makeGitRepo, tempDir } from './core-fixtures.js';

export interface CrashRepo {
  repo: string;
  home: string;
  /** Scratch space outside every working tree (markers for commands that hang once). */
  scratch: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

/** A repository whose `.atlas/templates/` holds `templates` (name → YAML), committed, and a temp ATLAS_HOME. */
export function crashRepo(templates: Record<string, string>): CrashRepo {
  const repo = makeGitRepo();
  const home = tempDir('atlas-crash-home-');
  const scratch = tempDir('atlas-crash-scratch-');
  mkdirSync(join(repo, '.atlas', 'templates'), { recursive: true });
  for (const [name, yaml] of Object.entries(templates)) writeFileSync(join(repo, '.atlas', 'templates', `${name}.yaml`), yaml);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'templates');
  const env: NodeJS.ProcessEnv = {};
  for (const key of Object.keys(process.env)) if (key.startsWith('ATLAS_')) env[key] = undefined;
  Object.assign(env, { ATLAS_HOME: home, CRASH_SCRATCH: scratch, CRASH_ATLAS: ATLAS_BIN, NO_COLOR: '1' });
  return {
    repo,
    home,
    scratch,
    env,
    cleanup: () => {
      for (const dir of [repo, home, scratch]) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function childEnv(r: CrashRepo, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...r.env, ...extra };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env;
}

export interface Started {
  child: ChildProcess;
  done: Promise<CliResult & { signal: NodeJS.Signals | null }>;
}

/** Any atlas command as a child process (in the repository, with the repo's environment). */
export function spawnAtlas(r: CrashRepo, args: string[]): ChildProcess {
  return spawn(process.execPath, [ATLAS_BIN, ...args], { cwd: r.repo, env: childEnv(r) });
}

/** `atlas start <template> <description> --no-interactive` as a child process. */
export function startTask(r: CrashRepo, template: string, description = 'crash test'): Started {
  const child = spawnAtlas(r, ['start', template, description, '--no-interactive']);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<CliResult & { signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code: code ?? -1, signal, stdout, stderr })),
  );
  return { child, done };
}

export function run(r: CrashRepo, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return atlas(args, { cwd: r.repo, env: childEnv(r, env) });
}

/** `atlas recover <args> --json`: the parsed result document (and the raw output for messages). */
export async function recover(r: CrashRepo, args: string[]): Promise<{ code: number; result: any; stderr: string; stdout: string }> {
  const out = await run(r, ['recover', ...args, '--json']);
  let result: any;
  try {
    result = JSON.parse(out.stdout);
  } catch {
    result = undefined;
  }
  return { code: out.code, result, stderr: out.stderr, stdout: out.stdout };
}

/** Every task directory under the repo's ATLAS_HOME. */
export function taskDirs(r: CrashRepo): string[] {
  const root = join(r.home, 'workspaces');
  if (!existsSync(root)) return [];
  const dirs: string[] = [];
  for (const ws of readdirSync(root)) {
    const tasks = join(root, ws, 'tasks');
    if (!existsSync(tasks)) continue;
    for (const id of readdirSync(tasks)) dirs.push(join(tasks, id));
  }
  return dirs.sort();
}

/** hook.json parsed and validated exactly as atlas reads it; throws if it does not parse. */
export function readHook(dir: string): Hook {
  return parseHook(JSON.parse(readFileSync(join(dir, 'hook.json'), 'utf8')));
}

function tryReadHook(dir: string): Hook | undefined {
  try {
    return readHook(dir);
  } catch {
    return undefined;
  }
}

export function readTaskJson(dir: string): { id: string; worktree: string; branch: string } {
  return JSON.parse(readFileSync(join(dir, 'task.json'), 'utf8'));
}

/** Polls the (only) task's hook.json until `predicate` holds; returns the hook seen. */
export async function waitForHook(
  r: CrashRepo,
  predicate: (hook: Hook) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<{ dir: string; hook: Hook }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dir = taskDirs(r).at(-1);
    const hook = dir ? tryReadHook(dir) : undefined;
    if (dir && hook && predicate(hook)) return { dir, hook };
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${hook ? ` (hook in ${hook.state}, last event ${hook.history.at(-1)?.trigger})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The step is running and has started its command (working_on is written when the command starts). */
export function runningCommand(step: string): (hook: Hook) => boolean {
  return (h) =>
    h.state === 'step_running' && h.current_step?.step_name === step && (h.current_step.working_on ?? '').startsWith('running ');
}

export function validating(step: string): (hook: Hook) => boolean {
  return (h) =>
    h.state === 'step_validating' && h.current_step?.step_name === step && !(h.current_step.working_on ?? '').startsWith('validation step');
}

function lockHeld(dir: string): boolean {
  return existsSync(join(dir, 'hook.json.lock'));
}

/**
 * SIGKILL. With the task's directory, the kill lands while the process does not hold the hook's
 * lock (it is frozen with SIGSTOP first, and let go a moment when it does): a lock left by a killed
 * process is only taken over once stale (5 s), which would slow every test down. Kills inside the
 * lock are the soak's business (bench/soak.mjs).
 */
export async function sigkill(child: ChildProcess, taskDir?: string): Promise<Hook | undefined> {
  if (child.exitCode !== null || child.signalCode !== null) return undefined;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  if (taskDir) {
    for (let i = 0; i < 200; i++) {
      child.kill('SIGSTOP');
      if (!lockHeld(taskDir)) break;
      child.kill('SIGCONT');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
  const frozen = taskDir ? tryReadHook(taskDir) : undefined;
  child.kill('SIGKILL');
  await exited;
  return frozen;
}

/**
 * Kills `child` between two steps: on every change of hook.json, when the last event is a
 * step_complete, the process is frozen (SIGSTOP), the hook re-read, and if it still stands
 * between the steps, killed; otherwise it is let go on to the next boundary. Returns the hook
 * seen while frozen.
 */
export async function killBetweenSteps(r: CrashRepo, child: ChildProcess, timeoutMs = 20_000): Promise<{ dir: string; hook: Hook }> {
  const { dir } = await waitForHook(r, () => true, 'the hook');
  const between = (h: Hook | undefined) => h !== undefined && h.state === 'step_pending' && h.history.at(-1)?.trigger === 'step_complete';
  return new Promise((resolve, reject) => {
    let busy = false;
    const finish = (error?: Error, hook?: Hook) => {
      watcher.close();
      clearInterval(poll);
      clearTimeout(timer);
      if (error) reject(error);
      else resolve({ dir, hook: hook! });
    };
    const check = () => {
      if (busy) return;
      if (!between(tryReadHook(dir)) || lockHeld(dir)) return;
      busy = true;
      child.kill('SIGSTOP');
      const frozen = tryReadHook(dir);
      if (between(frozen) && !lockHeld(dir)) {
        const exited = new Promise((res) => child.once('exit', res));
        child.kill('SIGKILL');
        void exited.then(() => finish(undefined, frozen));
        return;
      }
      child.kill('SIGCONT');
      busy = false;
    };
    const watcher = watch(dir, check);
    const poll = setInterval(check, 5);
    const timer = setTimeout(() => finish(new Error('no moment between two steps was caught')), timeoutMs);
    child.once('exit', () => {
      if (!busy) finish(new Error('the task ended before it could be killed between steps'));
    });
  });
}

/** Every file of a working tree (committed or not), path → content; .git excluded. */
export function treeFiles(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === '.git') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.set(relative(root, path), readFileSync(path, 'utf8'));
    }
  };
  walk(root);
  return files;
}

/** Every event of `before` is still in `after`, at the same place and unchanged. */
export function expectHistoryKept(before: readonly HookEvent[], after: readonly HookEvent[]): void {
  expect(after.length).toBeGreaterThanOrEqual(before.length);
  expect(after.slice(0, before.length)).toEqual(before);
}

/** What a kill must leave: a hook that parses, with all history seen before the kill. */
export function expectIntactAfterKill(dir: string, seenBeforeKill: Hook): Hook {
  const hook = readHook(dir);
  expectHistoryKept(seenBeforeKill.history, hook.history);
  return hook;
}

/** A file's content on a branch of the repository, or undefined. */
export function fileOnBranch(worktree: string, branch: string, path: string): string | undefined {
  try {
    return `${git(worktree, 'show', `${branch}:${path}`)}\n`;
  } catch {
    return undefined;
  }
}

/**
 * Every file present right after the kill is still in the working tree, or on the branch recovery
 * saved the work on (a retry_from_checkpoint reset).
 */
export function expectNoFileLost(worktree: string, afterKill: Map<string, string>, savedBranch?: string): void {
  const now = treeFiles(worktree);
  const lost: string[] = [];
  for (const path of afterKill.keys()) {
    if (now.has(path)) continue;
    if (savedBranch && fileOnBranch(worktree, savedBranch, path) !== undefined) continue;
    lost.push(path);
  }
  expect(lost, 'files lost after recovery').toEqual([]);
}

/**
 * A stand-in for Claude Code in `<dir>/bin` (returned): logs its argv to $FAKE_CLAUDE_LOG, reports
 * session sess-crash-1 and a first message, then hangs on a fresh run (the moment to kill); a run
 * with --resume writes analysis.md and finishes.
 */
export function installHangingClaude(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const script = `#!/usr/bin/env node
const fs = require('node:fs');
const argv = process.argv.slice(2);
fs.appendFileSync(process.env.FAKE_CLAUDE_LOG, JSON.stringify(argv) + '\\n');
const at = argv.indexOf('--resume');
const session = at >= 0 ? argv[at + 1] : 'sess-crash-1';
const emit = (e) => process.stdout.write(JSON.stringify(e) + '\\n');
emit({ type: 'system', subtype: 'init', session_id: session, cwd: process.cwd(), model: 'fake', tools: ['Write'] });
emit({ type: 'assistant', message: { content: [{ type: 'text', text: 'Reading the code.' }] }, session_id: session });
if (at < 0) {
  setTimeout(() => {}, 30000);
} else {
  fs.writeFileSync('analysis.md', 'the cause\\n');
  emit({ type: 'result', subtype: 'success', is_error: false, result: 'Found the cause.', session_id: session });
}
`;
  writeFileSync(join(bin, 'claude'), script, { mode: 0o755 });
  return bin;
}

/** The process exists and is not a zombie (an orphan's new parent may be slow to reap it). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return true;
  }
}
