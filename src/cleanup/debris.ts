// What SIGKILLed atlas processes leave behind and nothing else removes: task folders `atlas start`
// claimed and never finished (half-created.ts), temp files of interrupted atomic writes
// (stale-temp-files.ts), and workspace folders a start created and left empty. Every decision is
// taken before anything is removed, so a dry run reports exactly what the real run removes.
import type { TaskRef } from '../store/task-store.js';
import { assessHalfCreated, removeHalfCreated } from './half-created.js';
import type { StaleTempFile } from './stale-temp-files.js';
import { findStaleTempFiles, removeStaleTempFile } from './stale-temp-files.js';
import type { TempPlace } from './temp-places.js';
import { homeTempPlaces, taskTempPlaces, workspaceTempPlace } from './temp-places.js';
import { isAbandonedEmptyWorkspace, listWorkspaceNames, removeEmptyWorkspace } from './workspace-folder.js';

export interface HalfCreatedRemoved {
  task_id: string;
  workspace: string;
  dir: string;
  /** Since the folder or anything in it last changed. */
  age_ms: number;
  bytes: number;
}

export interface HalfCreatedKept {
  task_id: string;
  workspace: string;
  dir: string;
  reason: string;
}

export interface DebrisOptions {
  home: string;
  dryRun: boolean;
  now: number;
  graceMs: number;
  /** Task folders without task.json and hook.json. */
  halfCreated: readonly TaskRef[];
  /** Task folders that stay (their temp files are searched; removed tasks take theirs along). */
  taskDirs: readonly string[];
  /** Workspaces holding task folders: never "left empty"; the task decisions settle them. */
  busyWorkspaces: ReadonlySet<string>;
}

export interface DebrisReport {
  halfCreatedRemoved: HalfCreatedRemoved[];
  halfCreatedKept: HalfCreatedKept[];
  tempFilesRemoved: StaleTempFile[];
  /** Empty workspace folders removed. */
  emptyWorkspaces: string[];
  /** Paths of the temp files that go (or, dry, would go), for the workspace decisions after this. */
  goingFiles: Set<string>;
  bytes: number;
}

export function sweepDebris(options: DebrisOptions): DebrisReport {
  const { home, now, graceMs } = options;
  const workspaces = listWorkspaceNames(home);
  const places: TempPlace[] = [
    ...options.taskDirs.flatMap((dir) => taskTempPlaces(dir)),
    ...workspaces.map((ws) => workspaceTempPlace(ws, home)),
    ...homeTempPlaces(home),
  ];

  // Decide everything first: removing a file changes its folder's mtime.
  const temps = findStaleTempFiles(places, now, graceMs);
  const goingFiles = new Set(temps.map((t) => t.path));
  const empty = workspaces.filter((ws) => !options.busyWorkspaces.has(ws) && isAbandonedEmptyWorkspace(ws, home, now, graceMs, goingFiles));
  const halves = options.halfCreated.map((ref) => ({ ref, assessment: assessHalfCreated(ref.dir, now, graceMs) }));

  const report: DebrisReport = {
    halfCreatedRemoved: [],
    halfCreatedKept: [],
    tempFilesRemoved: [],
    emptyWorkspaces: [],
    goingFiles,
    bytes: 0,
  };
  for (const { ref, assessment } of halves) {
    const where = { task_id: ref.id, workspace: ref.workspace, dir: ref.dir };
    if (assessment.action === 'keep') {
      report.halfCreatedKept.push({ ...where, reason: assessment.reason });
      continue;
    }
    const outcome = options.dryRun
      ? { ok: true as const, bytes: assessment.bytes, ageMs: assessment.ageMs }
      : removeHalfCreated(ref.dir, now, graceMs);
    if (!outcome.ok) {
      report.halfCreatedKept.push({ ...where, reason: outcome.reason });
      continue;
    }
    report.halfCreatedRemoved.push({ ...where, age_ms: outcome.ageMs, bytes: outcome.bytes });
    report.bytes += outcome.bytes;
  }
  for (const temp of temps) {
    if (!options.dryRun && !removeStaleTempFile(temp, now, graceMs)) {
      goingFiles.delete(temp.path);
      continue;
    }
    report.tempFilesRemoved.push(temp);
    report.bytes += temp.bytes;
  }
  for (const ws of empty) {
    if (options.dryRun || removeEmptyWorkspace(ws, home)) report.emptyWorkspaces.push(ws);
  }
  return report;
}
