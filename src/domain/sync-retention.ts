// Which stored versions `atlas sync prune` (and `sync.keep_versions`) removes, decided before
// anything changes. Pure: the caller reads the store, this decides (docs/sync.md#retention).

import { VERSION_PATTERN } from './sync-plan.js';
import { TASK_ID_PATTERN } from './task.js';

/** An incomplete version younger than this (by its name, the push's unix time) may still be written. */
export const INCOMPLETE_GRACE_SECONDS = 3600;

/** A workspace name: what may name a folder in the store. */
export const TREE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** A tree the store holds: `<workspace>` or `<workspace>/.tasks/<task-id>`, nothing else. */
export function isStoredTreeName(tree: string): boolean {
  const parts = tree.split('/');
  if (parts.length === 1) return TREE_NAME_PATTERN.test(parts[0]!);
  return parts.length === 3 && TREE_NAME_PATTERN.test(parts[0]!) && parts[1] === '.tasks' && TASK_ID_PATTERN.test(parts[2]!);
}

export function isVersionName(version: string): boolean {
  return VERSION_PATTERN.test(version);
}

/**
 * What reading a version's `.sandbox-state` showed; undefined: not read (see planRetention). A
 * conflict version (a push behind the store) is whole but never counts as one of the newest N.
 */
export type VersionCondition = 'complete' | 'conflict' | 'incomplete' | 'damaged';

export interface RetentionPlan {
  /** The newest `keep` complete versions, oldest first. */
  kept: string[];
  /** Versions to remove, oldest first. */
  remove: string[];
  /** Incomplete versions old enough by rank but too young to be called abandoned. */
  spared: { version: string; reason: string }[];
}

/**
 * `names` oldest first. Keeps the newest `keep` complete versions and everything from the oldest of
 * them on (newer incomplete or damaged versions included); older versions go, except an incomplete
 * one younger than INCOMPLETE_GRACE_SECONDS (a push still under way). Without a complete version,
 * nothing goes. A version whose condition is unknown counts as incomplete when it is young. A
 * version that a kept one's manifest refers to for contents (`baseOf`) is kept too, however old.
 */
export function planRetention(
  names: readonly string[],
  conditionOf: (version: string) => VersionCondition | undefined,
  keep: number,
  nowSeconds: number,
  baseOf: (version: string) => string | undefined = () => undefined,
): RetentionPlan {
  if (!Number.isInteger(keep) || keep < 1) throw new RangeError(`keep must be a whole number >= 1, got ${keep}`);
  const kept: string[] = [];
  let oldestKept = -1;
  for (let i = names.length - 1; i >= 0 && kept.length < keep; i--) {
    if (conditionOf(names[i]!) === 'complete') {
      kept.unshift(names[i]!);
      oldestKept = i;
    }
  }
  const plan: RetentionPlan = { kept, remove: [], spared: [] };
  const bases = new Set<string>();
  for (let i = Math.max(oldestKept, 0); i < names.length; i++) {
    const base = baseOf(names[i]!);
    if (base !== undefined) bases.add(base);
  }
  for (let i = 0; i < oldestKept; i++) {
    const version = names[i]!;
    const condition = conditionOf(version);
    if (bases.has(version)) {
      plan.spared.push({ version, reason: 'a kept version names its contents by reference to it' });
      continue;
    }
    const young = nowSeconds - Number(version) <= INCOMPLETE_GRACE_SECONDS;
    if (young && (condition === 'incomplete' || condition === undefined)) {
      plan.spared.push({ version, reason: 'incomplete and younger than an hour: a push may still be writing it' });
    } else {
      plan.remove.push(version);
    }
  }
  return plan;
}

/**
 * A blob no kept version references is removed only once it is older than this: a push now under
 * way may have sent it (or made it young again, reusing it) and not yet written its manifest.
 */
export const BLOB_GRACE_SECONDS = 3600;

export interface BlobCollection {
  remove: string[];
  bytes: number;
  /** Unreferenced blobs spared because they are younger than the grace period. */
  young: number;
}

/** Which blobs garbage collection removes: referenced by no kept version, and past the grace period. */
export function planBlobCollection(
  blobs: ReadonlyMap<string, { size: number; modifiedMs: number }>,
  referenced: ReadonlySet<string>,
  nowMs: number,
  graceSeconds = BLOB_GRACE_SECONDS,
): BlobCollection {
  const plan: BlobCollection = { remove: [], bytes: 0, young: 0 };
  for (const [sha, blob] of blobs) {
    if (referenced.has(sha)) continue;
    if (nowMs - blob.modifiedMs <= graceSeconds * 1000) plan.young++;
    else {
      plan.remove.push(sha);
      plan.bytes += blob.size;
    }
  }
  plan.remove.sort();
  return plan;
}
