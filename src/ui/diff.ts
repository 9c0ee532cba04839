// The worktree's diff against the task's base as files (git's unified diff, parsed here: no diff
// library, well inside the script budget), each with its lines typed and its added/removed counts.

export type DiffLineKind = 'add' | 'del' | 'ctx' | 'hunk' | 'meta';

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
}

export interface DiffFile {
  /** The new path (the old one for a deleted file). */
  path: string;
  oldPath: string | undefined;
  status: 'added' | 'deleted' | 'renamed' | 'modified' | 'binary';
  added: number;
  removed: number;
  lines: DiffLine[];
}

/** "a/x" or "b/x" (possibly quoted by git) without its prefix. */
function unprefix(p: string): string {
  const q = /^"(.*)"$/.exec(p);
  const raw = q ? q[1]!.replace(/\\(.)/g, '$1') : p;
  return raw.replace(/^[ab]\//, '');
}

export function parseDiff(text: string): DiffFile[] {
  const files: DiffFile[] = [];
  let file: DiffFile | undefined;
  let inHunk = false;
  for (const line of text.split('\n')) {
    const head = /^diff --git (\S+|"[^"]*") (\S+|"[^"]*")$/.exec(line);
    if (head || (line.startsWith('diff --git ') && !head)) {
      const parts = head ? [unprefix(head[1]!), unprefix(head[2]!)] : [line.slice(11), line.slice(11)];
      file = { path: parts[1]!, oldPath: parts[0], status: 'modified', added: 0, removed: 0, lines: [] };
      files.push(file);
      inHunk = false;
      continue;
    }
    if (!file) continue;
    if (!inHunk) {
      if (line.startsWith('new file')) file.status = 'added';
      else if (line.startsWith('deleted file')) file.status = 'deleted';
      else if (line.startsWith('rename to ')) (file.status = 'renamed'), (file.path = line.slice(10));
      else if (line.startsWith('rename from ')) file.oldPath = line.slice(12);
      else if (line.startsWith('Binary files')) file.status = 'binary';
      else if (line.startsWith('+++ ') && line !== '+++ /dev/null') file.path = unprefix(line.slice(4));
    }
    if (line.startsWith('@@')) {
      inHunk = true;
      file.lines.push({ kind: 'hunk', text: line });
    } else if (!inHunk) {
      if (!line.startsWith('--- ') && !line.startsWith('+++ ') && !line.startsWith('index ')) file.lines.push({ kind: 'meta', text: line });
    } else if (line.startsWith('+')) {
      file.added++;
      file.lines.push({ kind: 'add', text: line });
    } else if (line.startsWith('-')) {
      file.removed++;
      file.lines.push({ kind: 'del', text: line });
    } else if (line.startsWith(' ')) {
      file.lines.push({ kind: 'ctx', text: line });
    } else if (line.startsWith('\\')) {
      file.lines.push({ kind: 'meta', text: line });
    }
  }
  for (const f of files) if (f.status !== 'renamed' && f.oldPath === f.path) f.oldPath = undefined;
  return files;
}
