// One request's folder (seed 004): context.md, work/, session-logs/, hook-events.jsonl and
// .state.json. Nothing from an event is ever written outside this folder.
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { UsageTotals } from '../../conversation/claude-transcript-usage.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { withLock } from '../../store/lock.js';
import type { ClaudeHookEvent } from './event.js';
import { safeId } from './event.js';
import { requestFiles } from './places.js';
import type { WorkFile } from './tags.js';

export type AgentStatus = 'running' | 'stopped' | 'unknown';

export interface AgentRecord {
  agent_type: string;
  started_at: string;
  ended_at?: string;
  status: AgentStatus;
}

export interface RequestState {
  request_id: string;
  session_id: string;
  started_at: string;
  /** "user" for a person's prompt; otherwise what Claude Code said it came from. */
  prompt_source: string;
  /** Subagents by agent_id. */
  agents: Record<string, AgentRecord>;
  files_touched: string[];
  compactions: number;
  /** The session's tokens when the request last stopped (from the transcript). */
  usage?: UsageTotals;
  stopped_at?: string;
  last_output?: string;
  stop_error?: string;
  ended_at?: string;
}

export function newRequestState(event: ClaudeHookEvent, requestId: string, at: string): RequestState {
  return {
    request_id: requestId,
    session_id: event.session_id,
    started_at: at,
    prompt_source: event.source ?? 'user',
    agents: {},
    files_touched: [],
    compactions: 0,
  };
}

export function requestDir(base: string, requestId: string): string {
  return join(base, safeId(requestId));
}

/** Creates the folder (idempotent); `state` is written only when there is none yet. */
export function ensureRequestDir(dir: string, state: () => RequestState): void {
  const files = requestFiles(dir);
  if (existsSync(files.state)) return;
  mkdirSync(files.work, { recursive: true });
  mkdirSync(files.logs, { recursive: true });
  try {
    // `wx`: the first of several parallel hooks writes it; the others leave it alone.
    writeFileSync(files.state, `${JSON.stringify(state(), null, 2)}\n`, { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

export function readRequestState(dir: string): RequestState | undefined {
  try {
    return JSON.parse(readFileSync(requestFiles(dir).state, 'utf8')) as RequestState;
  } catch {
    return undefined;
  }
}

export async function updateRequestState(dir: string, change: (state: RequestState) => RequestState): Promise<RequestState | undefined> {
  const path = requestFiles(dir).state;
  return withLock(path, () => {
    const current = readRequestState(dir);
    if (!current) return undefined;
    const next = change(current);
    writeFileAtomic(path, `${JSON.stringify(next, null, 2)}\n`, { durable: false });
    return next;
  });
}

/** One line per event, appended in a single write (O_APPEND keeps parallel hooks' lines whole). */
export function appendEventLine(file: string, event: ClaudeHookEvent, at: string, denied?: string): void {
  const line = `${JSON.stringify({ received_at: at, ...(denied ? { atlas_denied: denied } : {}), ...event.raw })}\n`;
  try {
    appendFileSync(file, line);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, line);
  }
}

export function appendContext(dir: string, text: string): void {
  appendFileSync(requestFiles(dir).context, text.endsWith('\n') ? text : `${text}\n`);
}

/** Writes work files inside work/ only (names were sanitized; this re-checks the containment). */
export function writeWorkFiles(dir: string, files: WorkFile[]): string[] {
  const root = requestFiles(dir).work;
  const written: string[] = [];
  for (const file of files) {
    const target = resolve(root, file.name);
    const rel = relative(root, target);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) continue;
    mkdirSync(dirname(target), { recursive: true });
    writeFileAtomic(target, file.content, { durable: false });
    written.push(rel);
  }
  return written;
}

/** Copies a transcript Claude Code wrote into session-logs/ (missing sources are skipped). */
export function copyLog(dir: string, source: string | undefined, name: string): boolean {
  if (!source || !existsSync(source)) return false;
  const logs = requestFiles(dir).logs;
  mkdirSync(logs, { recursive: true });
  copyFileSync(source, join(logs, safeId(name)));
  return true;
}

/**
 * This request's part of the session log: the transcript from the entry that opened the request
 * (its promptId) to the end. Falls back to the whole transcript when no entry names the request.
 */
export function writeSessionSnapshot(dir: string, transcriptPath: string | undefined, requestId: string, sessionId: string): boolean {
  if (!transcriptPath || !existsSync(transcriptPath)) return false;
  const lines = readFileSync(transcriptPath, 'utf8')
    .split('\n')
    .filter((l) => l.trim().length > 0);
  const needle = `"promptId":${JSON.stringify(requestId)}`;
  const first = lines.findIndex((l) => l.includes(needle));
  const kept = first >= 0 ? lines.slice(first) : lines;
  const logs = requestFiles(dir).logs;
  mkdirSync(logs, { recursive: true });
  writeFileAtomic(join(logs, `${safeId(sessionId)}.jsonl`), `${kept.join('\n')}\n`, { durable: false });
  return true;
}
