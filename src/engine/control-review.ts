// After a sandboxed step (its objects crossed): what did the task's branch, index and files bring
// in beyond code? Control-path changes, gitlinks, nested repositories and hidden index bits stop
// the task for a person's review (awaiting_human, each change listed) unless the template names
// the path in control_paths or a person already approved that very change. A nested repository
// in a task's own worktree is refused outright, as a changed top-level layout is: its git folder
// is moved into the task folder, so no git the person runs there obeys its config.
import { mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Task } from '../domain/task.js';
import type { ControlFinding } from '../git/control-changes.js';
import { controlChanges, findingKey } from '../git/control-changes.js';
import { runGit } from '../git/run-git.js';
import type { HookManager } from '../hook/manager.js';
import { readControlRecord, writeControlRecord } from '../store/control-record.js';
import { reviewLines, signControlReview } from './control-receipt.js';
import type { StepResult } from './executors/types.js';
import type { ValidationRecorder } from './validation-recorder.js';

/** The template names the path: the file itself, or a folder (ending in /) holding it. */
export function allowedByTemplate(path: string, allowed: readonly string[]): boolean {
  const p = path.toLowerCase();
  return allowed.some((a) => {
    const name = a.toLowerCase();
    return name.endsWith('/') ? p.startsWith(name) : p === name;
  });
}

function describeFinding(f: ControlFinding): string {
  return `${f.path} (${f.kind}): ${f.detail}`;
}

/** Moves a nested repository's git folder out of a task's own worktree; says where. */
function refuseNested(worktree: string, taskDir: string, path: string): string {
  const to = join(taskDir, 'refused', `nested-${Date.now()}`, path);
  try {
    mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
    renameSync(join(worktree, path), to);
    return `; moved to ${to}`;
  } catch {
    return '; it could not be moved away: remove it before running git there';
  }
}

export interface ReviewRun {
  task: Task;
  manager: HookManager;
  reporter: { note(text: string): void };
  validationRecorder?: ValidationRecorder | undefined;
}

export async function reviewControlChanges(run: ReviewRun, index: number, result: StepResult): Promise<StepResult> {
  const { task } = run;
  const taskDir = run.manager.ref.dir;
  const note = (text: string) => run.reporter.note(text);
  const head = await runGit(task.worktree, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { allowFailure: true });
  const tip = head.code === 0 ? head.stdout.trim() : undefined;
  const findings = await controlChanges(task.worktree, task.base_commit, tip);
  const record = readControlRecord(taskDir);
  const approved = new Set(record?.approved ?? []);
  const allowed = findings.filter((f) => allowedByTemplate(f.path, task.control_paths ?? []));
  const pending = findings.filter((f) => !allowed.includes(f) && !approved.has(findingKey(f)));
  const lines: string[] = [];
  for (const f of findings) {
    let text = describeFinding(f);
    if (f.kind === 'nested-repository' && !task.in_place && pending.includes(f)) text += refuseNested(task.worktree, taskDir, f.path);
    lines.push(text);
    note(`control change: ${text}${allowed.includes(f) ? ' (allowed by the template)' : approved.has(findingKey(f)) ? ' (approved)' : ''}`);
  }
  const next = {
    inspected_commit: tip ?? null,
    findings: findings.map((f, i) => ({ key: findingKey(f), text: lines[i]! })),
    approved: [...approved],
    allowed: allowed.map(findingKey),
    pending: pending.map(findingKey),
  };
  writeControlRecord(taskDir, next);
  if (findings.length === 0) return result;
  // Signed when what there is to say changed (not again after every later step).
  const said = (r: typeof record) => JSON.stringify([r?.findings.map((f) => f.key), r?.pending]);
  if (said(record) !== said(next)) {
    const signed = reviewLines(next.findings, next.allowed, approved);
    const id = await signControlReview({
      manager: run.manager,
      task,
      recorder: run.validationRecorder,
      stepIndex: index,
      exitCode: pending.length ? 1 : 0,
      lines: signed,
    });
    if (id)
      note(
        `control review signed: receipt ${id} (${pending.length ? `${pending.length} change(s) wait for a person` : 'every change approved or allowed'})`,
      );
  }
  const control = { control_changes: lines.slice(0, 100), control_pending: pending.length };
  if (pending.length === 0 || result.status !== 'ok') {
    return result.status === 'ok' || result.status === 'failed' ? { ...result, details: { ...result.details, ...control } } : result;
  }
  const prompt = [
    `This step changed what runs outside the sandbox later (${pending.length} change${pending.length === 1 ? '' : 's'} to review):`,
    ...pending.map((f) => `  - ${describeFinding(f)}`),
    `Look at them (git -C ${task.worktree} diff ${task.base_commit?.slice(0, 12) ?? 'HEAD'}; git ls-files -v), then approve (atlas resume --approve) or reject (atlas resume --reject).`,
    'A template can allow paths by name: control_paths: [".github/workflows/ci.yml"].',
  ].join('\n');
  return { status: 'waiting', reason: 'approval', prompt, details: { ...result.details, ...control } };
}
