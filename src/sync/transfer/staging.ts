// A pull writes each file beside its target under a temp name atlas keeps
// (`.sandbox-state.tmp.<pid>-<n>`), checks it, and renames the lot into place only once every
// content of the pull is checked: a pull that fails (a damaged content, a connection dropped, a
// full disk) leaves the folder as it was, its new temp files and the folders it made removed. Beside
// the target, not in one temp folder: the same filesystem, and on ext4 10,000 files made in one
// folder and renamed out of it cost 3-6 s in some runs, beside their targets 0.3-0.6 s (docs/performance.md#workspace-sync).
// A pull killed midway leaves temp files: the folders it staged in are written down first, in the
// root's `.sandbox-state.tmp`, and the next pull into the folder removes them there.
import { lstatSync, readdirSync, readFileSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathProblem, STAGED_TEMP_NAME, TEMP_DIR_NAME } from '../../domain/sync-state.js';
import type { Stage } from '../scan/safe-fs.js';
import { dropTemps, prepareTemps, renameStaged } from '../scan/safe-fs.js';
import { realFolder } from './open-folders.js';

/** In the root's temp folder: the folders a pull stages temp files in, one per line. */
const JOURNAL = 'staged-in';

let sequence = 0;

export class Staging implements Stage {
  readonly folders = new Map<string, Promise<void>>();
  readonly created: string[] = [];
  // An object and a temp path per staged file were part of a pull's peak (8-24 MB of RSS at 100,000
  // files): a staged file is its target (the entry's own string) and its temp's number, in two flat
  // lists made at their full size once the pull knows how many files it stages (lists grown a
  // step at a time leave their shorter copies to a full collection), and its temp path is made
  // again when it is renamed.
  private stagedRels: string[] = [];
  private stagedNumbers = new Uint32Array(0);
  private stagedCount = 0;
  /** Staged files renamed so far by commit(): an abort removes the temps of the others. */
  private committed = 0;
  /** Temps handed out and not staged yet (being written, or failed and removed by their writer). */
  private readonly pending = new Map<string, number>();
  private begun = false;

  constructor(readonly root: string) {}

  /**
   * Removes what a killed pull left, then writes down the folders of `entries` (where this one
   * stages). Nothing to stage and nothing left: the folder is not touched (it may be read-only).
   */
  async begin(entries: readonly { path: string }[]): Promise<void> {
    const journal = join(this.root, TEMP_DIR_NAME, JOURNAL);
    if (entries.length === 0 && !lstatSync(journal, { throwIfNoEntry: false })) return;
    this.begun = true;
    this.stagedRels = new Array<string>(entries.length);
    this.stagedNumbers = new Uint32Array(entries.length);
    removeLeftovers(this.root);
    await prepareTemps(this.root);
    const folders = new Set<string>();
    for (const { path } of entries) folders.add(dirname(path));
    writeFileSync(journal, [...folders].join('\n'), { mode: 0o600 });
  }

  private tempPath(rel: string, n: number): string {
    return join(this.root, dirname(rel), `${TEMP_DIR_NAME}.${process.pid}-${n}`);
  }

  tempFor(rel: string): string {
    sequence = (sequence + 1) % 1_000_000_000;
    const temp = this.tempPath(rel, sequence);
    this.pending.set(temp, sequence);
    return temp;
  }

  add(temp: string, rel: string): void {
    const n = this.pending.get(temp);
    // Only temps this staging handed out for `rel` are staged by number (every caller's case).
    if (n === undefined || this.tempPath(rel, n) !== temp) throw new Error(`${temp} was not made by this pull for ${rel}`);
    this.pending.delete(temp);
    if (this.stagedCount === this.stagedNumbers.length) this.grow();
    this.stagedRels[this.stagedCount] = rel;
    this.stagedNumbers[this.stagedCount++] = n;
  }

  /** More staged than `begin` was told of: twice the room. */
  private grow(): void {
    const numbers = new Uint32Array(Math.max(16, this.stagedNumbers.length * 2));
    numbers.set(this.stagedNumbers);
    this.stagedNumbers = numbers;
  }

  /** Every staged file renamed over its target, in the order staged. */
  commit(): void {
    const rels = this.stagedRels;
    for (; this.committed < this.stagedCount; this.committed++) {
      const rel = rels[this.committed]!;
      renameStaged(this.root, this.tempPath(rel, this.stagedNumbers[this.committed]!), rel);
    }
    this.clearStaged();
  }

  private clearStaged(): void {
    this.stagedRels = [];
    this.stagedNumbers = new Uint32Array(0);
    this.stagedCount = 0;
    this.committed = 0;
  }

  /** The pull failed: its temp files and the folders it made go (deepest first, only when empty). */
  abort(): void {
    for (const temp of this.pending.keys()) unlinkQuietly(temp);
    this.pending.clear();
    for (let i = this.committed; i < this.stagedCount; i++) unlinkQuietly(this.tempPath(this.stagedRels[i]!, this.stagedNumbers[i]!));
    this.clearStaged();
    for (const dir of [...this.created].sort((a, b) => b.length - a.length)) {
      try {
        rmdirSync(join(this.root, dir));
      } catch {
        // not empty (something else was written there meanwhile) or gone: left as it is
      }
    }
  }

  /** The journal goes once nothing is staged any more. */
  async end(): Promise<void> {
    if (this.begun) await dropTemps(this.root);
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already
  }
}

/**
 * The temp files a killed pull left in the folders it wrote down: only names atlas gives them, in
 * real folders inside the root (the journal is in the folder, which an agent may write: never a
 * path outside, never through a link).
 */
function removeLeftovers(root: string): void {
  const journal = join(root, TEMP_DIR_NAME, JOURNAL);
  if (!lstatSync(journal, { throwIfNoEntry: false })?.isFile()) return;
  for (const folder of readFileSync(journal, 'utf8').split('\n')) {
    if (folder !== '.' && (folder === '' || pathProblem(folder) !== undefined)) continue;
    const real = folder === '.' || realFolder(root, folder) !== undefined;
    if (!real) continue;
    const dir = join(root, folder);
    for (const name of readdirSync(dir)) if (STAGED_TEMP_NAME.test(name)) unlinkQuietly(join(dir, name));
  }
}

/**
 * Runs `write` (which stages files under `root`), then `beforeCommit`, then renames everything into
 * place; on a failure anywhere before the renames, nothing staged stays and `write`'s folders go.
 */
export async function staged<T>(
  root: string,
  entries: readonly { path: string }[],
  write: (stage: Stage) => Promise<T>,
  beforeCommit?: () => Promise<void>,
): Promise<T> {
  const staging = new Staging(root);
  await staging.begin(entries);
  try {
    const result = await write(staging);
    await beforeCommit?.();
    staging.commit();
    return result;
  } catch (error) {
    staging.abort();
    throw error;
  } finally {
    await staging.end();
  }
}
