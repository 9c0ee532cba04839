// Fixtures for the receipts/keys tests: temp ATLAS_HOME with a fresh master key, real git repos,
// tasks and hooks built through the store API, receipts recorded by the real signing recorder,
// and the built CLI run as a child process. Keys exist only in temp dirs, generated at test time.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureMasterKey } from '../../src/crypto/key-manager.js';
import { newHook } from '../../src/domain/hook.js';
import type { ValidationReceipt } from '../../src/domain/receipt.js';
import { DEFAULT_KEY_DERIVATION } from '../../src/domain/receipt.js';
import type { Task } from '../../src/domain/task.js';
import { toTimestamp } from '../../src/domain/time.js';
import type { ReceiptStatusFn } from '../../src/hook/manager.js';
import { HookManager } from '../../src/hook/manager.js';
import { createSigningRecorder } from '../../src/receipts/signing-recorder.js';
import { allocateTaskIndex } from '../../src/store/task-index.js';
import type { TaskRef } from '../../src/store/task-store.js';
import { claimTaskDir, writeTask } from '../../src/store/task-store.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CONFIG = { hooks: { key_derivation: DEFAULT_KEY_DERIVATION } };

export function tempDir(prefix = 'atlas-rcpt-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A fresh ATLAS_HOME with a master key (and account.xpub). */
export async function homeWithKey(): Promise<{ home: string; xpub: string; fingerprint: string }> {
  const home = tempDir('atlas-home-');
  const info = await ensureMasterKey(home, CONFIG);
  return { home, xpub: info.xpub, fingerprint: info.xpubFingerprint };
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
  }).trim();
}

/** A git repository with one commit. */
export function repo(): string {
  const dir = tempDir('atlas-repo-');
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'README.md'), '# demo\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'init');
  return dir;
}

export function commitChange(dir: string, file = 'change.txt', content = `${Date.now()}\n`): string {
  writeFileSync(join(dir, file), content);
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', `change ${file}`);
  return git(dir, 'rev-parse', 'HEAD');
}

export interface Fixture {
  home: string;
  ref: TaskRef;
  task: Task;
  manager: HookManager;
}

let clock = Date.parse('2026-01-17T14:30:22Z');

/** A task (task.json + hook.json) whose worktree is `worktree`, created through the store API. */
export async function createTask(
  home: string,
  worktree: string,
  options: { taskIndex?: boolean; receiptStatuses?: ReceiptStatusFn } = {},
): Promise<Fixture> {
  clock += 1000;
  const now = new Date(clock);
  const workspace = 'demo';
  const ref = claimTaskDir(workspace, now, home);
  const taskIndex = options.taskIndex === false ? undefined : await allocateTaskIndex(home);
  const at = toTimestamp(now);
  const task: Task = {
    schema_version: '1.0',
    id: ref.id,
    workspace_id: workspace,
    template: 'check',
    description: 'check the repo',
    created_at: at,
    updated_at: at,
    status: 'initializing',
    repo_root: worktree,
    worktree,
    in_place: true,
    branch: 'main',
    steps: [{ type: 'validation', name: 'validate', commands: ['npm test'], max_attempts: 1, on_failure: 'fail' }],
  };
  if (taskIndex !== undefined) task.task_index = taskIndex;
  writeTask(ref.dir, task);
  const hook = newHook(ref.id, workspace, at);
  if (taskIndex !== undefined) hook.task_index = taskIndex;
  const manager = new HookManager(ref, {
    maxCheckpoints: 50,
    ...(options.receiptStatuses ? { receiptStatuses: options.receiptStatuses } : {}),
  });
  await manager.create(hook);
  return { home, ref, task, manager };
}

let runCounter = 0;

/** Writes the output bytes under artifacts/ (as the runner does) and records a signed receipt. */
export async function recordRun(
  fx: Fixture,
  run: {
    step?: string;
    command?: string;
    exitCode?: number;
    stdout?: string | Buffer;
    stderr?: string | Buffer;
    executable?: string;
    validationTree?: 'worktree' | 'pristine';
    dependencies?: string;
  } = {},
): Promise<ValidationReceipt> {
  const step = run.step ?? 'validate';
  const n = ++runCounter;
  const stdout = Buffer.from(run.stdout ?? `ok ${n}\n`);
  const stderr = Buffer.from(run.stderr ?? '');
  const dir = join(fx.ref.dir, 'artifacts', step);
  mkdirSync(dir, { recursive: true });
  const stdoutArtifact = `artifacts/${step}/${n}-stdout.log`;
  const stderrArtifact = `artifacts/${step}/${n}-stderr.log`;
  writeFileSync(join(fx.ref.dir, stdoutArtifact), stdout);
  writeFileSync(join(fx.ref.dir, stderrArtifact), stderr);
  const recorder = createSigningRecorder(fx.home, CONFIG);
  const startedAt = new Date(Date.parse('2026-01-17T14:35:00Z') + n * 60_000);
  return recorder.record(fx.manager, fx.task, {
    stepName: step,
    stepIndex: 0,
    command: run.command ?? 'npm test',
    exitCode: run.exitCode ?? 0,
    startedAt,
    completedAt: new Date(startedAt.getTime() + 12_345),
    stdout,
    stderr,
    stdoutArtifact,
    stderrArtifact,
    executable: run.executable ?? '/usr/bin/npm',
    executionMode: 'local',
    validationTree: run.validationTree ?? 'worktree',
    dependencies: run.dependencies ?? 'worktree',
  });
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI (`node bin/atlas.cjs`) with ATLAS_HOME set. */
export function atlas(
  args: string[],
  options: { home: string; cwd?: string; env?: Record<string, string | undefined> },
): Promise<CliResult> {
  if (!existsSync(join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing: run `npm run build` first');
  const env: NodeJS.ProcessEnv = { ...process.env, ATLAS_HOME: options.home, ...options.env };
  for (const [k, v] of Object.entries(options.env ?? {})) if (v === undefined) delete env[k];
  if (!options.env || !('ATLAS_XPUB' in options.env)) delete env['ATLAS_XPUB'];
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'atlas.cjs'), ...args],
      { cwd: options.cwd ?? ROOT, env, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** Minimal XML well-formedness check (tags balanced, attributes quoted, entities known). */
export function assertWellFormedXml(text: string): void {
  const body = text.replace(/^<\?xml[^?]*\?>\s*/, '');
  const stack: string[] = [];
  const token = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"<]*")*)\s*(\/?)>|([^<]+)|(<)/g;
  for (let m = token.exec(body); m; m = token.exec(body)) {
    if (m[6]) throw new Error(`stray "<" at ${m.index}: ${body.slice(m.index, m.index + 40)}`);
    const textPart = m[5] ?? m[3] ?? '';
    for (const amp of textPart.matchAll(/&([^;\s]*);?/g)) {
      if (!/^(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+)$/.test(amp[1]!) || !amp[0].endsWith(';')) throw new Error(`bad entity ${amp[0]}`);
    }
    if (m[5] !== undefined) {
      if (stack.length === 0 && m[5].trim() !== '') throw new Error('text outside the root element');
      continue;
    }
    if (m[1]) {
      if (stack.pop() !== m[2]) throw new Error(`unbalanced </${m[2]}>`);
    } else if (!m[4]) {
      stack.push(m[2]!);
    }
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack.join('>, <')}>`);
}
