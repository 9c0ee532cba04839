// A Claude Code session travels with its conversation (issue 23): the next turn may run on another
// server, whose Claude Code folder lacks the session. Claude Code keeps a session in
// `<CLAUDE_CONFIG_DIR or ~/.claude>/projects/<project>/<session>.jsonl` (and `<session>/…`: its
// subagents' transcripts, large tool results), where <project> is the working folder with every
// character but letters and digits made "-". After each turn its files are copied into the
// conversation's own folder (`claude-session/`, beside the workspace, never inside it), which is
// stored as a tree of its own next to the workspace's (claude-session-sync.ts); before a turn, the
// restored copy goes into this server's project folder for the workspace, so `--resume` finds it.
//
// The files were written by the agent's process (which may write in Claude Code's folder), or came
// from the store: they are untrusted. The session id must be a UUID; names are checked; links and
// anything but regular files are never followed or copied; a session larger than
// MAX_SESSION_BYTES or with more than MAX_SESSION_FILES files is refused whole; a file is written
// to a new temp file (O_EXCL, so never through a link) and renamed into place, inside a folder
// checked to be a real folder where it should be.

import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { claudeConfigDir } from '../../agent/claude-config-dir.js';
import { findClaudeTranscript } from '../../conversation/claude-transcript-usage.js';
import { isReservedRootName } from '../../domain/sync-state.js';

export const SESSION_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The whole session (transcript and its own folder): beyond it the session does not travel. */
export const MAX_SESSION_BYTES = 64 * 1024 * 1024;
export const MAX_SESSION_FILES = 256;
/** The conversation's copy of its session, in its folder (outside the workspace the agent works in). */
export const SESSION_FOLDER = 'claude-session';

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

export type Note = (text: string) => void;

function javaHash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) | 0;
  return h;
}

/** The project folder name Claude Code gives a working folder (long names end with a hash of the path). */
export function claudeProjectName(cwd: string): string {
  const name = cwd.replace(/[^a-zA-Z0-9]/g, '-');
  return name.length <= 200 ? name : `${name.slice(0, 200)}-${Math.abs(javaHash(cwd)).toString(36)}`;
}

/** Where Claude Code, started in `workspace`, looks for the sessions it may resume. */
export function claudeProjectDir(workspace: string, env: NodeJS.ProcessEnv = process.env): string {
  let cwd = workspace;
  try {
    cwd = realpathSync(workspace);
  } catch {
    // Not made yet: the path as given.
  }
  return join(claudeConfigDir(env), 'projects', claudeProjectName(cwd));
}

interface Found {
  /** Relative to the session's folder: `<id>.jsonl` or `<id>/[<sub>/]<name>`. */
  rel: string;
  size: number;
}

type Listing = { ok: true; files: Found[]; bytes: number } | { ok: false; problem: string };

/** The session's files under `dir`, checked (links and odd names refused), without reading them. */
export function listSessionFiles(dir: string, id: string): Listing {
  if (!SESSION_ID_PATTERN.test(id)) return { ok: false, problem: 'the session id is not a UUID' };
  const files: Found[] = [];
  const problems: string[] = [];
  const regular = (rel: string): number | undefined => {
    const st = lstatSync(join(dir, rel), { throwIfNoEntry: false });
    if (!st) return undefined;
    if (!st.isFile()) {
      problems.push(`${rel} is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}`);
      return undefined;
    }
    return st.size;
  };
  const top = regular(`${id}.jsonl`);
  if (top === undefined) return { ok: false, problem: problems[0] ?? `no ${id}.jsonl` };
  files.push({ rel: `${id}.jsonl`, size: top });
  const walk = (rel: string, depth: number) => {
    const st = lstatSync(join(dir, rel), { throwIfNoEntry: false });
    if (!st) return;
    if (!st.isDirectory()) {
      problems.push(`${rel} is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a folder'}`);
      return;
    }
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = `${rel}/${name}`;
      if (!NAME.test(name)) {
        problems.push(`${JSON.stringify(path)} is not a name a session uses`);
        continue;
      }
      const entry = lstatSync(join(dir, path));
      if (entry.isDirectory() && depth < 2) walk(path, depth + 1);
      else {
        const size = regular(path);
        if (size !== undefined) files.push({ rel: path, size });
      }
      if (files.length > MAX_SESSION_FILES) return;
    }
  };
  walk(id, 1);
  if (problems.length > 0) return { ok: false, problem: problems.slice(0, 3).join('; ') };
  if (files.length > MAX_SESSION_FILES) return { ok: false, problem: `more than ${MAX_SESSION_FILES} files` };
  const bytes = files.reduce((n, f) => n + f.size, 0);
  if (bytes > MAX_SESSION_BYTES) return { ok: false, problem: `${bytes} bytes, more than ${MAX_SESSION_BYTES}` };
  return { ok: true, files, bytes };
}

/** A regular file's bytes, opened without following a link, refused when it grew past `limit`. */
function readBounded(path: string, limit: number): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`${path} is not a regular file`);
    if (st.size > limit) throw new Error(`${path} grew past the session's limit`);
    const buffer = Buffer.alloc(st.size);
    let read = 0;
    while (read < st.size) {
      const n = readSync(fd, buffer, read, st.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes `dir` (and the folders from `root` down to it) as real folders: a link, or a folder that
 * resolves anywhere else, is refused. `root` itself is trusted (Claude Code's folder, or the
 * conversation's).
 */
function realFolder(root: string, rel: string): string {
  let current = root;
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const top = realpathSync(root);
  for (const part of rel.split('/').filter(Boolean)) {
    current = join(current, part);
    const st = lstatSync(current, { throwIfNoEntry: false });
    if (!st) mkdirSync(current, { mode: 0o700 });
    else if (!st.isDirectory()) throw new Error(`${current} is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a folder'}`);
  }
  if (realpathSync(current) !== join(top, ...rel.split('/').filter(Boolean))) throw new Error(`${current} leads elsewhere`);
  return current;
}

/** Writes `body` as `name` in `dir`: a new temp file (never through a link), then renamed over. */
function writeAtomic(dir: string, name: string, body: Buffer): void {
  const temp = join(dir, `.${name}.${process.pid}.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}.tmp`);
  writeFileSync(temp, body, { flag: 'wx', mode: 0o600 });
  try {
    renameSync(temp, join(dir, name));
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** Copies the checked files from `from` into `root/<rel>`; throws on the first problem. */
function copyFiles(from: string, root: string, rel: string, files: readonly Found[]): void {
  for (const f of files) {
    const body = readBounded(join(from, f.rel), MAX_SESSION_BYTES);
    const dir = realFolder(root, [rel, dirname(f.rel) === '.' ? '' : dirname(f.rel)].filter(Boolean).join('/'));
    writeAtomic(dir, f.rel.split('/').pop()!, body);
  }
}

export interface SessionPlaces {
  /** The server conversation's folder (its `claude-session/` is the copy that travels). */
  dir: string;
  workspace: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * After a turn: the session's files, as Claude Code left them for this workspace, become the
 * conversation's copy (other sessions' files there go). Returns false when nothing was kept.
 */
export function keepSession(places: SessionPlaces, sessionId: string, note: Note): boolean {
  if (!SESSION_ID_PATTERN.test(sessionId)) {
    if (sessionId !== '') note('the session id is not a UUID: its files are not kept');
    return false;
  }
  const env = places.env ?? process.env;
  let from = claudeProjectDir(places.workspace, env);
  if (!lstatSync(join(from, `${sessionId}.jsonl`), { throwIfNoEntry: false })) {
    const found = findClaudeTranscript(sessionId, env);
    if (!found) {
      note('Claude Code left no transcript of the session: nothing to keep');
      return false;
    }
    from = dirname(found);
  }
  const listing = listSessionFiles(from, sessionId);
  if (!listing.ok) {
    note(`the session's files are not kept: ${listing.problem}`);
    return false;
  }
  try {
    const folder = realFolder(places.dir, SESSION_FOLDER);
    // One session per conversation: an earlier session's files (another provider, a fresh start) go.
    for (const name of readdirSync(folder)) {
      if (isReservedRootName(name) || name === `${sessionId}.jsonl` || name === sessionId) continue;
      rmSync(join(folder, name), { recursive: true, force: true });
    }
    copyFiles(from, places.dir, SESSION_FOLDER, listing.files);
    return true;
  } catch (error) {
    note(`the session's files are not kept: ${(error as Error).message}`);
    return false;
  }
}

/**
 * Before a turn: the conversation's copy of the session (restored from the store) goes where
 * Claude Code looks for it from this workspace, unless this server's own transcript is already as
 * long (it ran the last turn). Returns whether the session can be resumed here.
 */
export function placeSession(places: SessionPlaces, sessionId: string, note: Note): boolean {
  const env = places.env ?? process.env;
  const known = () => findClaudeTranscript(sessionId, env) !== undefined;
  if (!SESSION_ID_PATTERN.test(sessionId)) {
    if (sessionId !== '') note('the session id is not a UUID: it is not placed');
    return sessionId !== '' && known();
  }
  const kept = join(places.dir, SESSION_FOLDER);
  const target = claudeProjectDir(places.workspace, env);
  const keptTop = lstatSync(join(kept, `${sessionId}.jsonl`), { throwIfNoEntry: false });
  if (!keptTop) return known();
  const here = lstatSync(join(target, `${sessionId}.jsonl`), { throwIfNoEntry: false });
  if (here?.isFile() && here.size >= keptTop.size) return true;
  const listing = listSessionFiles(kept, sessionId);
  if (!listing.ok) {
    note(`the stored session is refused: ${listing.problem}`);
    return known();
  }
  const config = claudeConfigDir(env);
  try {
    copyFiles(kept, config, `projects/${basename(target)}`, listing.files);
    return true;
  } catch (error) {
    note(`the stored session is refused: ${(error as Error).message}`);
    return known();
  }
}
