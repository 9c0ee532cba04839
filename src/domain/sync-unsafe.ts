// Which entries of a state atlas refuses to write: a path that could leave the root or name what
// atlas keeps for itself, a path listed twice, a file listed where another entry needs a folder.
// Pure. A state in path order (as atlas writes them) is checked an entry at a time as it is read,
// holding only the paths later ones could lie under: a base read to be merged is never held whole.
import type { FileEntry, Refusal, StateFile } from './sync-state.js';
import { pathProblem, strictlyInPathOrder } from './sync-state.js';

const clashProblem = (folder: string) => `needs ${folder} to be a folder, but ${folder} is also listed as a file`;

/**
 * The checks of `unsafeEntries` for paths given one at a time in strict path order. In that order,
 * every path listed between a path P and a path under P starts with P, so the listed paths a later
 * path can lie under are a chain of prefixes of the latest one.
 */
export class OrderedPathCheck {
  private readonly problems: Refusal[] = [];
  private readonly clashes: Refusal[] = [];
  /** The listed paths that are prefixes of the latest path, shortest first. */
  private readonly chain: string[] = [];

  /** The next path; the caller makes sure it comes after the one before. */
  add(path: string): void {
    const problem = pathProblem(path);
    if (problem !== undefined) this.problems.push({ path, problem });
    while (this.chain.length > 0 && !path.startsWith(this.chain.at(-1)!)) this.chain.pop();
    const clash = this.shortestFolderIn(path);
    if (clash !== undefined) this.clashes.push({ path, problem: clashProblem(clash) });
    this.chain.push(path);
  }

  /** What `unsafeEntries` says of the paths so far, in its order. */
  refusals(): Refusal[] {
    return [...this.problems, ...this.clashes];
  }

  /** The shortest listed path that `path` needs as a folder: a chain entry ended by a `/` in `path`. */
  private shortestFolderIn(path: string): string | undefined {
    // By bisection on length (the chain grows by length): a hostile chain of thousands stays cheap.
    for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
      let [low, high] = [0, this.chain.length];
      while (low < high) {
        const mid = (low + high) >>> 1;
        if (this.chain[mid]!.length < slash) low = mid + 1;
        else high = mid;
      }
      if (this.chain[low]?.length === slash) return this.chain[low];
    }
    return undefined;
  }
}

/** Entries a hostile or damaged state could use to write outside the root or over each other. */
export function unsafeEntries(files: readonly FileEntry[]): Refusal[] {
  if (strictlyInPathOrder(files)) {
    const check = new OrderedPathCheck();
    for (const f of files) check.add(f.path);
    return check.refusals();
  }
  const refusals: Refusal[] = [];
  const seen = new Set<string>();
  for (const f of files) {
    const problem = pathProblem(f.path);
    if (problem) refusals.push({ path: f.path, problem });
    else if (seen.has(f.path)) refusals.push({ path: f.path, problem: 'is listed twice' });
    seen.add(f.path);
  }
  // Folders already known to have no file listed on their way: checked once, not once per file.
  const clear = new Set<string>();
  for (const f of files) {
    const last = f.path.lastIndexOf('/');
    if (last <= 0 || clear.has(f.path.slice(0, last))) continue;
    let clash: string | undefined;
    for (let slash = f.path.indexOf('/'); slash > 0 && slash <= last && clash === undefined; slash = f.path.indexOf('/', slash + 1)) {
      if (seen.has(f.path.slice(0, slash))) clash = f.path.slice(0, slash);
    }
    if (clash === undefined) clear.add(f.path.slice(0, last));
    else refusals.push({ path: f.path, problem: clashProblem(clash) });
  }
  return refusals;
}

/** A state's folders (`dirs`) that could not be made safely: the same rules as files' paths. */
export function unsafeDirs(state: Pick<StateFile, 'dirs' | 'dir_modes' | 'dir_times' | 'hardlinks'>): Refusal[] {
  return [
    ...(state.dirs ?? []),
    ...Object.keys(state.dir_modes ?? {}),
    ...Object.keys(state.dir_times ?? {}),
    ...(state.hardlinks ?? []).flat(),
  ].flatMap((path) => {
    const problem = pathProblem(path);
    return problem ? [{ path, problem }] : [];
  });
}
