// What the guard reads in a tool call: every string argument that names a path (at any depth of
// the tool's input, so MCP tools whose argument is `file`, `paths` or anything else are judged
// too), resolved through symlinks, and what each one is to atlas.
import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';

/** The deepest existing ancestor resolved through symlinks, the rest appended as written. */
export function resolveThroughLinks(path: string): string {
  let head = path;
  const tail: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(head), ...tail.reverse());
    } catch {
      const parent = dirname(head);
      if (parent === head) return path;
      tail.push(basename(head));
      head = parent;
    }
  }
}

export function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** Bounds on the walk of a tool's input (a hostile input cannot make the guard slow). */
const MAX_DEPTH = 8;
const MAX_STRINGS = 2000;

/**
 * Every string in a tool's input that may name a path: single-line, not a URL. Multi-line text
 * (a file's content, an edit's new text) is content, not a path.
 */
export function pathStrings(input: unknown): string[] {
  const out: string[] = [];
  const walk = (value: unknown, depth: number) => {
    if (out.length >= MAX_STRINGS || depth > MAX_DEPTH) return;
    if (typeof value === 'string') {
      if (value.length === 0 || value.length >= 4096 || value.includes('\n')) return;
      // A path inside a file: URI, or after `--flag=`, is a path too (MCP tools take both).
      if (/^file:/i.test(value)) {
        const path = fileUriPath(value);
        if (path) out.push(path);
        return;
      }
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return;
      out.push(value);
      const flag = /^--?[\w-]+=(.+)$/.exec(value);
      if (flag) out.push(flag[1]!);
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, depth + 1);
    } else if (value && typeof value === 'object') {
      for (const item of Object.values(value)) walk(item, depth + 1);
    }
  };
  walk(input, 0);
  return out;
}

function fileUriPath(uri: string): string | undefined {
  try {
    return decodeURIComponent(new URL(uri).pathname);
  } catch {
    return undefined;
  }
}

export type PathKind = 'keys' | 'home' | 'contains-home' | 'task-record' | 'atlas-config' | 'task-tmp' | 'home-other';

/**
 * The agent's own tree when the session runs inside ATLAS_HOME: a task's worktree
 * (workspaces/<ws>/worktree) or a server conversation's workspace
 * (server/accounts/<a>/conversations/<id>/workspace).
 */
export function ownTree(cwd: string, home: string): string | undefined {
  if (!inside(cwd, home) || cwd === home) return undefined;
  const parts = relative(home, cwd).split(sep);
  if (parts[0] === 'workspaces' && parts[2] === 'worktree') return join(home, ...parts.slice(0, 3));
  if (parts[0] === 'server' && parts[1] === 'accounts' && parts[3] === 'conversations' && parts[5] === 'workspace')
    return join(home, ...parts.slice(0, 6));
  return undefined;
}

/**
 * What a path (absolute, resolved) is to atlas; `own` is the agent's own tree, if it lies in
 * ATLAS_HOME. Compared without case: on a case-insensitive volume `KEYS/Master.Key` is the key
 * (on a case-sensitive one this refuses a few paths that only differ in case from atlas's).
 */
export function classify(rawPath: string, rawHome: string, rawOwn?: string): PathKind | undefined {
  const path = rawPath.toLowerCase();
  const home = rawHome.toLowerCase();
  const own = rawOwn?.toLowerCase();
  if (own && inside(path, own)) return undefined;
  if (!inside(path, home)) return inside(home, path) ? 'contains-home' : undefined;
  if (path === home) return 'home';
  const parts = relative(home, path).split(sep);
  if (parts[0] === 'keys') return 'keys';
  if (parts[0] === 'config.yaml' || parts[0] === 'templates' || parts[0] === 'server' || parts[0] === 'store') return 'atlas-config';
  // workspaces/<ws>/tasks/<id>/<file...>
  if (parts[0] === 'workspaces' && parts[2] === 'tasks' && parts.length >= 5) {
    const file = parts[4]!;
    if (file === 'hook.json' || file === 'artifacts' || file === 'receipts' || file.startsWith('hook.json.')) return 'task-record';
    if (file === 'tmp') return 'task-tmp';
  }
  return 'home-other';
}
