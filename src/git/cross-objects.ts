// The crossing: how a sandboxed task's new objects enter the person's repository. A step writes
// objects only into its task's own store (task-objects.ts); after each step, and before recovery
// runs git on the task, atlas packs what the task's branch and index need that the repository
// lacks and hands the pack to `git index-pack --strict` in the repository: it recomputes every
// object's id from its bytes, fscks each one, and refuses links to objects that neither the pack
// nor the repository holds (what `git fetch` does with transfer.fsckObjects). A forged object (its
// bytes not those its id names), a pack shadowing an object, a planted alternate: none gets in.
// Nothing outside the sandbox reads the task's store otherwise. When the crossing fails, the
// task's branch goes back to its last verified commit and the store is kept as evidence.
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { tryReadTask } from '../store/task-store.js';
import type { GitLayout } from './layout.js';
import { gitLayout, layoutEnv } from './layout.js';
import { gitEnv, runGit } from './run-git.js';
import { checkTaskHead } from './task-head.js';
import { ensureObjectDir, overlayEnv, stepObjectDir } from './task-objects.js';
import { dropMissingEntries, reflogIds, taskReflogs } from './task-reflogs.js';

export interface CrossInput {
  worktree: string;
  taskDir: string;
  /** The task's branch ('HEAD' for an in-place task on a detached HEAD). */
  branch: string;
  /** The commit the task started from (its objects are the repository's). */
  base?: string | undefined;
}

export interface CrossResult {
  /** Objects that crossed (0 when the step wrote none). */
  objects: number;
}

/** The last commit of the task's branch that crossed (verified), kept in the task folder. */
const CROSSED_FILE = 'crossed-tip';

export async function crossTaskObjects(input: CrossInput): Promise<CrossResult> {
  const layout = gitLayout(input.worktree);
  if (!layout) return { objects: 0 };
  if (input.branch !== 'HEAD') checkTaskHead(layout.gitDir, input.branch);
  const store = stepObjectDir(input.taskDir);
  if (!holdsObjects(store)) return { objects: 0 };
  const ref = input.branch === 'HEAD' ? 'HEAD' : `refs/heads/${input.branch}`;
  const last = lastCrossed(input.taskDir) ?? input.base;
  let tip: string | undefined;
  try {
    // The step's own store may name further stores: only the repository's is read beside it.
    rmSync(join(store, 'info', 'alternates'), { force: true });
    tip = await refTip(input.worktree, ref, ref === 'HEAD' ? layout.gitDir : layout.common);
    const tips = [...new Set([...(tip ? [tip] : []), ...reflogIds(taskReflogs(layout, input.branch))])];
    const objects = await bringAcross(layout, input.worktree, store, input.taskDir, tips, last);
    if (tip !== undefined) await mustBeCommit(input.worktree, tip);
    // Not fsynced: lost in a crash, the next crossing starts from the base again (slower, as safe).
    if (tip !== undefined) writeFileAtomic(join(input.taskDir, CROSSED_FILE), `${tip}\n`, { durable: false });
    rmSync(store, { recursive: true, force: true });
    ensureObjectDir(store);
    return { objects };
  } catch (error) {
    throw await refuse(input, layout, store, ref, tip, last, error);
  }
}

/** The crossing for the task in `taskDir`, when its tree exists (recovery, a run's start). */
export async function crossBeforeGit(taskDir: string): Promise<CrossResult> {
  const task = tryReadTask(taskDir);
  if (!task || !existsSync(task.worktree)) return { objects: 0 };
  return crossTaskObjects({ worktree: task.worktree, taskDir, branch: task.branch, base: task.base_commit });
}

/** The store has loose objects or packs (an empty one costs nothing to cross). */
export function holdsObjects(store: string): boolean {
  let names: string[];
  try {
    names = readdirSync(store);
  } catch {
    return false;
  }
  if (names.some((n) => n !== 'pack' && n !== 'info')) return true;
  try {
    return readdirSync(join(store, 'pack')).length > 0;
  } catch {
    return false;
  }
}

function lastCrossed(taskDir: string): string | undefined {
  try {
    const text = readFileSync(join(taskDir, CROSSED_FILE), 'utf8').trim();
    return /^[0-9a-f]{40,64}$/.test(text) ? text : undefined;
  } catch {
    return undefined;
  }
}

/** What the ref names, read without reading the object (it may not have crossed yet). */
async function refTip(worktree: string, ref: string, common: string): Promise<string | undefined> {
  // A step's commit leaves its branch a loose ref: read the file (one git process less).
  try {
    const text = readFileSync(join(common, ref), 'utf8').trim();
    if (/^[0-9a-f]{40,64}$/.test(text)) return text;
  } catch {
    // packed, or HEAD: ask git
  }
  const { stdout, code } = await runGit(worktree, ['rev-parse', '--verify', '--quiet', '--end-of-options', ref], { allowFailure: true });
  return code === 0 ? stdout.trim() : undefined;
}

async function mustBeCommit(worktree: string, tip: string): Promise<void> {
  const { stdout, code } = await runGit(worktree, ['cat-file', '-t', tip], { allowFailure: true });
  if (code !== 0 || stdout.trim() !== 'commit')
    throw new Error(`the branch names ${tip}, which is not a commit in the repository after the crossing`);
}

/** Packs (in the task's store over the repository's) and indexes (in the repository alone). */
async function bringAcross(
  layout: GitLayout,
  worktree: string,
  store: string,
  taskDir: string,
  tips: string[],
  last: string | undefined,
): Promise<number> {
  const pack = join(taskDir, 'crossing.pack');
  try {
    const env = { ...gitEnv(), ...layoutEnv(layout), ...overlayEnv(layout.common, store) };
    const staged = await stagedObjects(worktree, env, tips[0]);
    const revs = [...tips, ...staged, ...(last ? ['--not', last] : [])].join('\n');
    await gitToFile(['pack-objects', '--revs', '--stdout', '-q'], worktree, env, revs, pack);
    const count = packCount(pack);
    if (count === 0) return 0;
    // index-pack reads the pack from a file atlas wrote, in the repository with no other store.
    await gitFromFile(['index-pack', '--stdin', '--strict'], layout.common, { ...gitEnv(), GIT_DIR: layout.common }, pack);
    return count;
  } finally {
    rmSync(pack, { force: true });
  }
}

/**
 * The blobs the index holds beyond the tip's tree (staged, not committed): they cross too, so
 * atlas's own git on the tree finds every object its index names. Read in the task's store (only
 * to choose what to send: what is sent is verified on arrival).
 */
async function stagedObjects(worktree: string, env: NodeJS.ProcessEnv, tip: string | undefined): Promise<string[]> {
  const args = tip ? ['diff-index', '--cached', '--no-renames', '--raw', '-z', '--no-abbrev', tip] : ['ls-files', '-s', '-z'];
  const out = await gitText(args, worktree, env);
  const ids = new Set<string>();
  for (const field of out.split('\0')) {
    // diff-index: ":old new oldId newId X"; ls-files -s: "mode id stage\tpath".
    const parts = field.replace(/^:/, '').split(/[ \t]/);
    const id = tip ? parts[3] : parts[1];
    const mode = tip ? parts[1] : parts[0];
    if (id && /^[0-9a-f]{40,64}$/.test(id) && !/^0+$/.test(id) && mode !== '160000') ids.add(id);
  }
  return [...ids];
}

function gitText(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`git ${args[0]} failed: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}

/** The object count in a pack's header (0 for a pack with no objects). */
function packCount(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const header = Buffer.alloc(12);
    if (readSync(fd, header, 0, 12, 0) < 12 || header.toString('latin1', 0, 4) !== 'PACK')
      throw new Error('git pack-objects wrote no pack');
    return header.readUInt32BE(8);
  } finally {
    closeSync(fd);
  }
}

function gitToFile(args: string[], cwd: string, env: NodeJS.ProcessEnv, input: string, outFile: string): Promise<void> {
  const out = openSync(outFile, 'w', 0o600);
  return finished(spawn('git', args, { cwd, env, stdio: ['pipe', out, 'pipe'] }), args, () => closeSync(out), input);
}

function gitFromFile(args: string[], cwd: string, env: NodeJS.ProcessEnv, inFile: string): Promise<void> {
  const fd = openSync(inFile, 'r');
  return finished(spawn('git', args, { cwd, env, stdio: [fd, 'ignore', 'pipe'] }), args, () => closeSync(fd));
}

function finished(child: ReturnType<typeof spawn>, args: string[], close: () => void, input?: string): Promise<void> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < 4000) stderr += chunk.toString('utf8');
  });
  if (input !== undefined) child.stdin?.end(`${input}\n`);
  return new Promise((resolve, reject) => {
    child.on('error', (error) => {
      close();
      reject(error);
    });
    child.on('close', (code) => {
      close();
      if (code === 0) resolve();
      else
        reject(new Error(`git ${args[0]} refused the task's objects: ${stderr.trim().split('\n').slice(-3).join(' ') || `exit ${code}`}`));
    });
  });
}

/** The branch goes back to its last verified commit, the store aside as evidence; the error says so. */
async function refuse(
  input: CrossInput,
  layout: GitLayout,
  store: string,
  ref: string,
  tip: string | undefined,
  last: string | undefined,
  error: unknown,
): Promise<AtlasError> {
  if (error instanceof AtlasError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  const refused = join(input.taskDir, 'refused');
  const kept = join(refused, `objects-${Date.now()}`);
  let where = '';
  try {
    mkdirSync(refused, { recursive: true, mode: 0o700 });
    if (existsSync(store)) renameSync(store, kept);
    ensureObjectDir(store);
    where = `; the step's objects are kept in ${kept}`;
  } catch {
    where = `; the step's objects are in ${store}`;
  }
  let back = '';
  if (tip && last && tip !== last && ref !== 'HEAD') {
    const reset = await runGit(input.worktree, ['update-ref', ref, last], { allowFailure: true });
    back = reset.code === 0 ? `; ${ref} is back at its last verified commit ${last.slice(0, 12)}` : '';
  }
  await dropMissingEntries(input.worktree, taskReflogs(layout, input.branch)).catch(() => undefined);
  return new AtlasError(`the task's new git objects did not verify, so none entered the repository: ${reason}${back}${where}`, {
    exitCode: EXIT.failure,
    hint: 'a step wrote objects whose bytes are not what their ids name (or links to objects it never wrote); look at what the step ran (HOOK.md) before continuing',
  });
}
