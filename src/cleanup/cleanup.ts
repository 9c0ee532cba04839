// `atlas cleanup`: deletes tasks that ended longer ago than their retention, with their clean
// worktrees, and reports what went (docs/cleanup.md). A dry run makes the same decisions and
// computes the same figures, and changes nothing.
//
// Safety: hook.json decides (never a non-terminal task, never one whose hook cannot be read);
// each task is removed while holding its hook's lock, after reading the hook again under it; the
// task folder is first renamed out of the tree (atomic) and only then deleted.
//
// It also sweeps what killed atlas processes leave (debris.ts): task folders `atlas start` never
// finished, temp files of interrupted writes, empty workspace folders, a killed server's bridges.

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Hook } from '../domain/hook.js';
import type { Task, Workspace } from '../domain/task.js';
import { toTimestamp } from '../domain/time.js';
import { sweepDeadBridges } from '../exec/sandbox/bridge-record.js';
import { sweepLitter } from '../exec/sandbox/litter.js';
import { describeSweep } from '../exec/sandbox/litter-text.js';
import type { BridgeSweep } from '../exec/sandbox/socat.js';
import { realpath } from '../git/locate.js';
import { PRIVATE_DIR_MODE, writeFileAtomic } from '../store/atomic-write.js';
import { readHookFile } from '../store/hook-file.js';
import { readJsonFile, toJson } from '../store/json-file.js';
import { withLock } from '../store/lock.js';
import { sandboxBridgesDir, taskFiles } from '../store/paths.js';
import type { TaskRef } from '../store/task-store.js';
import { listTaskRefs, tryReadTask, workspaceFile } from '../store/task-store.js';
import type { HalfCreatedKept, HalfCreatedRemoved } from './debris.js';
import { sweepDebris } from './debris.js';
import { directorySize, fileSize } from './dir-size.js';
import { DEBRIS_GRACE_MS } from './grace.js';
import { isHalfCreated } from './half-created.js';
import type { RetentionDecision, RetentionMs, TerminalState } from './retention.js';
import { retentionDecision } from './retention.js';
import type { StaleTempFile } from './stale-temp-files.js';
import { removeWorkspace, workspaceRemovable } from './workspace-folder.js';
import type { WorktreeAssessment } from './worktree.js';
import { assessWorktree, pruneWorktrees, removeWorktree, separateWorktree } from './worktree.js';

export interface CleanupOptions {
  home: string;
  dryRun: boolean;
  /** Retention for a task, by the repository it was started from (its .atlas/config.yaml applies). */
  retentionFor: (repoRoot: string) => Promise<RetentionMs>;
  now?: () => Date;
  /** How old debris of a killed process must be to go (default DEBRIS_GRACE_MS). */
  graceMs?: number;
  /** Told after a task's worktree was removed, before its folder goes (OnTerminate hooks). Never throws. */
  onWorktreeRemoved?: (task: Task, taskDir: string, path: string) => Promise<void>;
  /** Remove worktrees that hold ignored files (a .env, build output) too, deleting those files. */
  includeIgnored?: boolean;
}

export type WorktreeOutcome =
  | { path: string; action: 'removed'; bytes: number; ignored: string[] }
  | { path: string; action: 'kept'; reason: string }
  | { path: string; action: 'missing' };

export interface CleanedTask {
  task_id: string;
  workspace: string;
  state: TerminalState;
  description: string;
  ended_at: string;
  age_ms: number;
  retention_ms: number;
  /** Bytes of the task's folder under ATLAS_HOME. */
  bytes: number;
  /** Absent when the task ran in the repository itself. */
  worktree?: WorktreeOutcome;
}

export interface SkippedTask {
  task_id: string;
  workspace: string;
  dir: string;
  reason: string;
}

export interface CleanupReport {
  dry_run: boolean;
  /** Removed (or, in a dry run, would be removed). */
  removed: CleanedTask[];
  by_state: Record<TerminalState, number>;
  /** Task folders, removed worktrees, emptied workspaces and swept debris, summed before deleting. */
  bytes_freed: number;
  worktrees_removed: string[];
  worktrees_kept: { path: string; task_id: string; reason: string }[];
  workspaces_removed: string[];
  /** Tasks left alone because they cannot be judged safely. */
  skipped: SkippedTask[];
  kept: { active: number; within_retention: number };
  /** Task folders `atlas start` claimed and never finished, removed (dry: that would be). */
  half_created_removed: HalfCreatedRemoved[];
  /** Half-created task folders left alone, with the reason (too recent, owned, or holding other files). */
  half_created_kept: HalfCreatedKept[];
  /** Temp files of interrupted atomic writes, removed (dry: that would be). */
  temp_files_removed: StaleTempFile[];
  /** What killed sandboxed runs left (worktree stubs, bridge sockets, socat), removed (dry: that would be). */
  sandbox_litter_removed: { task_id: string; removed: string }[];
  /** The network bridges of killed sandboxed servers (socat, their sockets), stopped (dry: that would be). */
  server_bridges_removed: BridgeSweep;
}

type Expired = Extract<RetentionDecision, { expired: true }>;

interface Candidate {
  ref: TaskRef;
  task: Task;
  decision: Expired;
}

type Loaded =
  | { kind: 'ok'; ref: TaskRef; task: Task; hook: Hook }
  | { kind: 'unreadable'; ref: TaskRef; reason: string; task: Task | undefined };

function load(ref: TaskRef): Loaded {
  const task = tryReadTask(ref.dir);
  let hook: Hook;
  try {
    hook = readHookFile(taskFiles(ref.dir).hook);
  } catch (error) {
    return { kind: 'unreadable', ref, task, reason: `hook.json cannot be read: ${(error as Error).message}` };
  }
  if (!task) return { kind: 'unreadable', ref, task, reason: 'task.json is missing or invalid, so its worktree is unknown' };
  return { kind: 'ok', ref, task, hook };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export async function cleanupTasks(options: CleanupOptions): Promise<CleanupReport> {
  const now = options.now ?? (() => new Date());
  const report: CleanupReport = {
    dry_run: options.dryRun,
    removed: [],
    by_state: { completed: 0, failed: 0, abandoned: 0 },
    bytes_freed: 0,
    worktrees_removed: [],
    worktrees_kept: [],
    workspaces_removed: [],
    skipped: [],
    kept: { active: 0, within_retention: 0 },
    half_created_removed: [],
    half_created_kept: [],
    temp_files_removed: [],
    sandbox_litter_removed: [],
    // A killed sandboxed server's socat processes serve nothing: stopped with the rest of the debris.
    server_bridges_removed: sweepDeadBridges(sandboxBridgesDir(options.home), { dryRun: options.dryRun }),
  };
  if (!options.dryRun) sweepTrash(options.home);

  // 1. Decide from hook.json, task by task.
  const refs = listTaskRefs(options.home);
  const expired: Candidate[] = [];
  const halfCreated: TaskRef[] = [];
  const staying: { ref: TaskRef; task: Task | undefined }[] = [];
  const retentionCache = new Map<string, Promise<RetentionMs>>();
  const retentionOf = (repoRoot: string) => {
    if (!retentionCache.has(repoRoot)) retentionCache.set(repoRoot, options.retentionFor(repoRoot));
    return retentionCache.get(repoRoot)!;
  };
  for (const ref of refs) {
    // First, so that a worktree is judged without the stubs a killed sandboxed run left in it.
    const litter = await sweepLitter(ref.dir, { dryRun: options.dryRun });
    const removedLitter = litter ? describeSweep(litter, litter.worktree) : '';
    if (removedLitter) report.sandbox_litter_removed.push({ task_id: ref.id, removed: removedLitter });
    // Nothing ran in it and nothing uses it: the debris sweep below decides for it.
    if (isHalfCreated(ref.dir)) {
      halfCreated.push(ref);
      continue;
    }
    const loaded = load(ref);
    if (loaded.kind === 'unreadable') {
      report.skipped.push({ task_id: ref.id, workspace: ref.workspace, dir: ref.dir, reason: loaded.reason });
      staying.push({ ref, task: loaded.task });
      continue;
    }
    const decision = retentionDecision(loaded.hook, await retentionOf(loaded.task.repo_root), now());
    if (decision.expired) {
      expired.push({ ref, task: loaded.task, decision });
    } else {
      if (decision.why === 'active') report.kept.active++;
      else if (decision.why === 'within_retention') report.kept.within_retention++;
      else
        report.skipped.push({ task_id: ref.id, workspace: ref.workspace, dir: ref.dir, reason: 'hook.json has no valid time of its end' });
      staying.push({ ref, task: loaded.task });
    }
  }

  // 2. Worktrees: one decision per folder, taken with the last expired task that uses it.
  const stayingUsers = new Map<string, string[]>();
  for (const s of staying) {
    const path = s.task ? separateWorktree(s.task) : undefined;
    if (path) stayingUsers.set(path, [...(stayingUsers.get(path) ?? []), s.ref.id]);
  }
  const lastUser = new Map<string, string>();
  for (const c of expired) {
    const path = separateWorktree(c.task);
    if (path) lastUser.set(path, c.ref.id);
  }
  const assessments = new Map<string, WorktreeAssessment>();
  for (const c of expired) {
    const path = separateWorktree(c.task);
    if (path && lastUser.get(path) === c.ref.id)
      assessments.set(
        c.ref.id,
        await assessWorktree(c.task, stayingUsers.get(path) ?? [], { includeIgnored: Boolean(options.includeIgnored) }),
      );
  }

  // 3. Act (or, dry, only account).
  const removedIds = new Set<string>();
  for (const c of expired) {
    let assessment = assessments.get(c.ref.id);
    const path = separateWorktree(c.task);
    if (path && assessment && assessment.action === 'remove' && !options.dryRun) {
      // An earlier task of this folder that could not be removed after all still needs it.
      const left = expired.filter((o) => o !== c && separateWorktree(o.task) === path && !removedIds.has(o.ref.id));
      if (left.length > 0) assessment = { action: 'keep', path, reason: `still used by ${left.map((o) => o.ref.id).join(', ')}` };
    }
    const entry = options.dryRun ? account(c, assessment) : await removeTask(c, assessment, options, now);
    if (typeof entry === 'string') {
      report.skipped.push({ task_id: c.ref.id, workspace: c.ref.workspace, dir: c.ref.dir, reason: entry });
      continue;
    }
    removedIds.add(c.ref.id);
    report.removed.push(entry);
    report.by_state[entry.state]++;
    report.bytes_freed += entry.bytes;
    const wt = entry.worktree;
    if (wt?.action === 'removed') {
      report.worktrees_removed.push(wt.path);
      report.bytes_freed += wt.bytes;
    } else if (wt?.action === 'kept') {
      report.worktrees_kept.push({ path: wt.path, task_id: c.ref.id, reason: wt.reason });
    }
  }

  // 4. Debris of killed processes, in the tasks and workspaces that stay and in $ATLAS_HOME.
  const touched = new Set(expired.filter((c) => removedIds.has(c.ref.id)).map((c) => c.ref.workspace));
  const half = new Set(halfCreated.map((r) => r.id));
  const debris = sweepDebris({
    home: options.home,
    dryRun: options.dryRun,
    now: now().getTime(),
    graceMs: options.graceMs ?? DEBRIS_GRACE_MS,
    halfCreated,
    taskDirs: refs.filter((r) => !removedIds.has(r.id) && !half.has(r.id)).map((r) => r.dir),
    busyWorkspaces: new Set(refs.map((r) => r.workspace)),
  });
  report.half_created_removed = debris.halfCreatedRemoved;
  report.half_created_kept = debris.halfCreatedKept;
  report.temp_files_removed = debris.tempFilesRemoved;
  report.workspaces_removed.push(...debris.emptyWorkspaces);
  report.bytes_freed += debris.bytes;
  for (const h of debris.halfCreatedRemoved) {
    removedIds.add(h.task_id);
    touched.add(h.workspace);
  }

  // 5. Workspaces whose last task went are removed; the others list only the tasks that remain.
  for (const workspace of touched) {
    const remaining = refs.filter((r) => r.workspace === workspace && !removedIds.has(r.id));
    if (options.dryRun) {
      if (remaining.length === 0 && workspaceRemovable(workspace, options.home, removedIds, debris.goingFiles)) {
        report.workspaces_removed.push(workspace);
        report.bytes_freed += fileSize(workspaceFile(workspace, options.home));
      }
      continue;
    }
    const bytes = fileSize(workspaceFile(workspace, options.home));
    if (remaining.length === 0 && removeWorkspace(workspace, options.home)) {
      report.workspaces_removed.push(workspace);
      report.bytes_freed += bytes;
    } else {
      await dropFromWorkspace(workspace, removedIds, options.home, now());
    }
  }
  return report;
}

function entryOf(c: Candidate, decision: Expired, bytes: number, worktree: WorktreeOutcome | undefined): CleanedTask {
  const entry: CleanedTask = {
    task_id: c.ref.id,
    workspace: c.ref.workspace,
    state: decision.state,
    description: c.task.description,
    ended_at: decision.endedAt,
    age_ms: decision.ageMs,
    retention_ms: decision.retentionMs,
    bytes,
  };
  if (worktree) entry.worktree = worktree;
  return entry;
}

function outcomeOf(assessment: WorktreeAssessment | undefined): WorktreeOutcome | undefined {
  // Undefined: another expired task using the same folder (the last one) decides for it.
  if (assessment === undefined) return undefined;
  switch (assessment.action) {
    case 'none':
      return undefined;
    case 'missing':
      return { path: assessment.path, action: 'missing' };
    case 'keep':
      return { path: assessment.path, action: 'kept', reason: assessment.reason };
    case 'remove':
      return { path: assessment.path, action: 'removed', bytes: assessment.bytes, ignored: assessment.ignored };
  }
}

/** Dry run: what removeTask would do, from the same decisions and the same figures. */
function account(c: Candidate, assessment: WorktreeAssessment | undefined): CleanedTask {
  return entryOf(c, c.decision, directorySize(c.ref.dir), outcomeOf(assessment));
}

async function removeTask(
  c: Candidate,
  assessment: WorktreeAssessment | undefined,
  options: CleanupOptions,
  now: () => Date,
): Promise<CleanedTask | string> {
  const files = taskFiles(c.ref.dir);
  let trash: string | undefined;
  let outcome: CleanedTask | string;
  try {
    outcome = await withLock(files.hook, async (): Promise<CleanedTask | string> => {
      // Decide again under the lock: the hook may have changed since it was first read.
      let hook: Hook;
      try {
        hook = readHookFile(files.hook);
      } catch (error) {
        return `hook.json cannot be read: ${errorText(error)}`;
      }
      const decision = retentionDecision(hook, await options.retentionFor(c.task.repo_root), now());
      if (!decision.expired)
        return decision.why === 'active' ? 'no longer in a terminal state' : 'updated meanwhile; within its retention again';
      const bytes = directorySize(c.ref.dir);
      let worktree = outcomeOf(assessment);
      if (worktree?.action === 'removed') {
        const result = await removeWorktree(realpath(c.task.repo_root), worktree.path);
        if (!result.ok) worktree = { path: worktree.path, action: 'kept', reason: result.reason };
        else await options.onWorktreeRemoved?.(c.task, c.ref.dir, worktree.path);
      } else if (worktree?.action === 'missing') {
        await pruneWorktrees(realpath(c.task.repo_root));
      }
      // Out of the tree in one rename while locked; the slow delete happens after the lock.
      trash = trashPath(options.home, c.ref);
      renameSync(c.ref.dir, trash);
      return entryOf(c, decision, bytes, worktree);
    });
  } catch (error) {
    return `could not be removed: ${errorText(error)}`;
  }
  if (trash) rmSync(trash, { recursive: true, force: true });
  return outcome;
}

function trashDir(home: string): string {
  return join(home, 'trash');
}

function trashPath(home: string, ref: TaskRef): string {
  const dir = trashDir(home);
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  return join(dir, `${ref.workspace}--${ref.id}--${randomBytes(4).toString('hex')}`);
}

/** Leftovers of a cleanup that was interrupted between the rename and the delete. */
function sweepTrash(home: string): void {
  const dir = trashDir(home);
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}

async function dropFromWorkspace(workspace: string, removed: ReadonlySet<string>, home: string, now: Date): Promise<void> {
  const path = workspaceFile(workspace, home);
  if (!existsSync(path)) return;
  try {
    await withLock(path, () => {
      const ws = readJsonFile(path) as Workspace;
      if (!Array.isArray(ws.tasks)) return;
      const tasks = ws.tasks.filter((id) => !removed.has(id));
      if (tasks.length === ws.tasks.length) return;
      writeFileAtomic(path, toJson({ ...ws, tasks, updated_at: toTimestamp(now) }));
    });
  } catch {
    // workspace.json is a listing aid; a stale entry names a task that no longer exists.
  }
}
