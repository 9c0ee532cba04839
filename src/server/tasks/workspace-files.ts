// The workspace over the API: a folder listing or one file's bytes, read from a conversation's
// workspace or a task's worktree. Everything in there may have been written by an agent, so the
// path is checked part by part: no "..", no absolute path, no `.git`, and no symbolic link at any
// level (the last part is opened with O_NOFOLLOW, so a link swapped in meanwhile is refused too).
import { constants } from 'node:fs';
import { lstat, open, readdir, realpath } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { HttpError, sendJson } from '../http/http.js';

const MAX_FILE = 10 * 1024 * 1024;
const MAX_ENTRIES = 10_000;

function invalidPath(message: string): HttpError {
  return new HttpError(400, 'invalid_path', `path: ${message}`, { field: 'path' });
}

/** The path's parts, or 400 for anything that could leave the root. */
export function pathParts(raw: string | null): string[] {
  const text = raw ?? '';
  if (text.length > 4096) throw invalidPath('is longer than 4096 characters');
  if (text.includes('\0') || text.includes('\\')) throw invalidPath('must not contain NUL or backslashes');
  if (text.startsWith('/')) throw invalidPath('must be relative to the workspace');
  const parts = text.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw invalidPath('must not contain ".."');
  if (parts.includes('.git')) throw new HttpError(403, 'path_refused', "path: git's own folder is not served", { field: 'path' });
  return parts;
}

type Kind = 'file' | 'dir' | 'symlink' | 'other';

/** Answers a listing (JSON) or the file's bytes; 404 when missing, 403 for a symbolic link. */
export async function serveWorkspacePath(res: ServerResponse, root: string, raw: string | null): Promise<void> {
  const parts = pathParts(raw);
  const rootStat = await lstat(root).catch(() => undefined);
  if (!rootStat?.isDirectory()) throw new HttpError(404, 'not_found', 'the workspace does not exist (yet)');
  let current = root;
  for (const part of parts) {
    current = join(current, part);
    const st = await lstat(current).catch(() => undefined);
    if (!st) throw new HttpError(404, 'not_found', `path: no such file or folder`, { field: 'path' });
    if (st.isSymbolicLink()) throw new HttpError(403, 'path_refused', 'path: symbolic links are not followed', { field: 'path' });
  }
  // A folder swapped for a link between the checks above and now still cannot lead outside.
  const real = await realpath(current);
  if (real !== join(await realpath(root), ...parts))
    throw new HttpError(403, 'path_refused', 'path: symbolic links are not followed', { field: 'path' });
  const st = await lstat(current);
  const shown = parts.join('/');
  if (st.isDirectory()) {
    const entries = await readdir(current, { withFileTypes: true });
    const listed = await Promise.all(
      entries.slice(0, MAX_ENTRIES).map(async (e) => {
        const type: Kind = e.isSymbolicLink() ? 'symlink' : e.isDirectory() ? 'dir' : e.isFile() ? 'file' : 'other';
        const size = type === 'file' ? (await lstat(join(current, e.name)).catch(() => undefined))?.size : undefined;
        return { name: e.name, type, ...(size !== undefined ? { size } : {}) };
      }),
    );
    listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    sendJson(res, 200, { path: shown, entries: listed, ...(entries.length > MAX_ENTRIES ? { truncated: true } : {}) });
    return;
  }
  if (!st.isFile()) throw new HttpError(403, 'path_refused', 'path: only files and folders are served');
  if (st.size > MAX_FILE) throw new HttpError(413, 'file_too_large', `path: the file is ${st.size} bytes; at most ${MAX_FILE} are served`);
  const handle = await open(current, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => {
    throw new HttpError(403, 'path_refused', 'path: the file could not be opened without following a link');
  });
  try {
    const data = await handle.readFile();
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': data.length,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'content-disposition': 'attachment',
    });
    res.end(data);
  } finally {
    await handle.close();
  }
}
