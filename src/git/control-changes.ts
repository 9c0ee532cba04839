// What a task's branch brings in beyond ordinary code: changes to control paths (control-paths.ts)
// since the commit the task started from, in its commits, its index and its files (new ones too,
// which the git step would commit); gitlinks; nested git folders; and index entries git is told
// not to look at (skip-worktree, assume-unchanged), which make a changed file look clean. Read
// with atlas's own git, from the repository's verified objects (after the crossing).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { changedLifecycle, controlReason, isManifest } from './control-paths.js';
import { runGit } from './run-git.js';

export interface ControlFinding {
  path: string;
  kind: 'control-path' | 'lifecycle-script' | 'gitlink' | 'nested-repository' | 'skip-worktree' | 'assume-unchanged';
  /** What it is and where it was seen (commits, index, files). */
  detail: string;
  /** The path's content (index entry and file): an approved change committed later is the same. */
  version: string;
}

/** The finding's identity: the same change seen again is not asked about twice. */
export function findingKey(f: ControlFinding): string {
  return `${f.kind}:${f.path}:${f.version}`;
}

function fileHash(path: string): string {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 16);
  } catch {
    return '-';
  }
}

interface RawChange {
  path: string;
  newMode: string;
  where: string;
}

/** `git diff --raw -z` output: ":old new oldId newId status\0path\0" per entry. */
function parseRaw(out: string, where: string): RawChange[] {
  const fields = out.split('\0');
  const changes: RawChange[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const meta = fields[i]!;
    if (!meta.startsWith(':')) break;
    changes.push({ path: fields[i + 1]!, newMode: meta.slice(1).split(' ')[1] ?? '', where });
  }
  return changes;
}

async function hooksPathInTree(worktree: string): Promise<string | undefined> {
  const { stdout, code } = await runGit(worktree, ['config', '--get', 'core.hooksPath'], { allowFailure: true, userHooks: true });
  const value = stdout.trim();
  return code === 0 && value && !value.startsWith('/') && !value.startsWith('..') ? value : undefined;
}

async function show(worktree: string, spec: string): Promise<string | undefined> {
  const { stdout, code } = await runGit(worktree, ['cat-file', 'blob', spec], { allowFailure: true });
  return code === 0 ? stdout : undefined;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

export async function controlChanges(worktree: string, base: string | undefined, tip: string | undefined): Promise<ControlFinding[]> {
  const from = base ?? (await runGit(worktree, ['hash-object', '-t', 'tree', '/dev/null'])).stdout.trim();
  const diff = (args: string[], where: string) =>
    runGit(worktree, ['diff', '--raw', '-z', '--no-renames', '--no-abbrev', ...args], { allowFailure: true }).then((r) =>
      parseRaw(r.stdout, where),
    );
  const [commits, index, files, untracked, bits, hooksPath, nested] = await Promise.all([
    tip && tip !== base ? diff([from, tip], 'commits') : Promise.resolve([]),
    diff(['--cached', from], 'index'),
    diff([from], 'files'),
    runGit(worktree, ['ls-files', '-o', '--exclude-standard', '-z'], { allowFailure: true }).then((r) =>
      r.stdout
        .split('\0')
        .filter(Boolean)
        .map((path) => ({ path, newMode: '100644', where: 'new files' })),
    ),
    runGit(worktree, ['ls-files', '-v', '-s', '-z'], { allowFailure: true }).then((r) => r.stdout.split('\0').filter(Boolean)),
    hooksPathInTree(worktree),
    nestedGitFolders(worktree),
  ]);
  // "<tag> <mode> <id> <stage>\t<path>" per index entry.
  const entries = bits.map((e) => ({ tag: e[0]!, id: e.split(' ')[2] ?? '', path: e.slice(e.indexOf('\t') + 1) }));
  const ids = new Map(entries.map((e) => [e.path, e.id]));
  const version = (path: string) => `${ids.get(path) ?? '-'}:${fileHash(join(worktree, path))}`;
  const byPath = new Map<string, RawChange[]>();
  for (const c of [...commits, ...index, ...files, ...untracked]) byPath.set(c.path, [...(byPath.get(c.path) ?? []), c]);
  const out: ControlFinding[] = [];
  for (const [path, seen] of byPath) {
    const where = [...new Set(seen.map((c) => c.where))].join(', ');
    if (seen.some((c) => c.newMode === '160000'))
      out.push({ path, kind: 'gitlink', detail: `a gitlink (a commit of another repository) in ${where}`, version: version(path) });
    const reason = controlReason(path, hooksPath);
    if (reason) out.push({ path, kind: 'control-path', detail: `${reason}; changed in ${where}`, version: version(path) });
    else if (isManifest(path)) {
      const before = base ? await show(worktree, `${base}:${path}`) : undefined;
      const versions = [
        tip ? await show(worktree, `${tip}:${path}`) : undefined,
        await show(worktree, `:${path}`),
        readText(join(worktree, path)),
      ];
      const scripts = [...new Set(versions.flatMap((v) => changedLifecycle(before, v)))];
      if (scripts.length > 0)
        out.push({
          path,
          kind: 'lifecycle-script',
          detail: `npm lifecycle scripts changed: ${scripts.join(', ')}; in ${where}`,
          version: version(path),
        });
    }
  }
  for (const { tag, path } of entries) {
    if (tag === 'S')
      out.push({
        path,
        kind: 'skip-worktree',
        detail: 'skip-worktree bit set in the index: git does not compare the file with what is committed',
        version: version(path),
      });
    else if (tag !== tag.toUpperCase())
      out.push({
        path,
        kind: 'assume-unchanged',
        detail: 'assume-unchanged bit set in the index: git does not compare the file with what is committed',
        version: version(path),
      });
  }
  for (const path of nested)
    out.push({
      path,
      kind: 'nested-repository',
      detail: 'a git folder inside the tree: git run there obeys its config (core.fsmonitor, hooks)',
      version: '-',
    });
  return out;
}

/** `.git` files and folders below the top of the tree (ripgrep, as the sandbox's scan does). */
export function nestedGitFolders(worktree: string): Promise<string[]> {
  const args = [
    '--files',
    '--hidden',
    '--no-ignore',
    '--max-depth',
    '10',
    '-g',
    '**/.git',
    '-g',
    '**/.git/HEAD',
    '-g',
    '!**/node_modules/**',
  ];
  return new Promise((resolve) => {
    execFile('rg', args, { cwd: worktree, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (_error, stdout) => {
      const found = new Set<string>();
      for (const line of String(stdout ?? '').split('\n')) {
        const dir = line.endsWith('/.git/HEAD') ? line.slice(0, -'/HEAD'.length) : line;
        if (dir.endsWith('/.git') && !dir.startsWith('.git/')) found.add(dir);
      }
      resolve([...found].sort());
    });
  });
}
