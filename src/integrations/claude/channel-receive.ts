// atlas's end of the hook channel (channel-frame.ts): the lines the sandboxed hooks wrote are put
// back together, checked, and recorded here, outside the sandbox, where $ATLAS_HOME is writable.
// Everything on the channel is untrusted (any process of the step inherits the descriptor): a
// message is size-limited and validated, may only speak for this task's worktree and sessions,
// and may change no request folder that existed before the channel opened (earlier requests get
// at most an appended event line). Transcript paths are followed only inside Claude Code's folder.
import { statSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { realpath } from '../../git/locate.js';
import type { ChannelMessage } from './channel-frame.js';
import { FRAME_TAG, MAX_CHUNKS, MAX_LINE_BYTES, MAX_MESSAGE_BYTES } from './channel-frame.js';
import { logFailure } from './entry.js';
import type { ClaudeHookEvent } from './event.js';
import { parseHookEvent } from './event.js';
import { recordEvent } from './handle.js';
import { readSessionEntry } from './session-map.js';

export interface HookChannelTarget {
  home: string;
  /** The task folder the launched Claude Code works for. */
  taskDir: string;
  /** Its worktree: every event's cwd must lie in it. */
  worktree: string;
  /** Claude Code's config folder: the only place transcripts are read from. */
  claudeConfigDir: string;
  /**
   * A server conversation's own Claude Code session (resumed by this run): its events are accepted
   * though its session entry names no task (the conversation's workspace is no task's worktree).
   */
  session?: string | undefined;
}

/** Messages being put together at once, and their bytes: beyond these the oldest is dropped. */
const MAX_PENDING = 64;
const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/** Request folders one channel may create (a flood of made-up prompt ids stops here). */
const MAX_REQUESTS = 1000;
/** How long a transcript an event names may take to appear (as waitForFinalMessage waits for its end). */
const TRANSCRIPT_WAIT_MS = 2000;
/** The events whose recording reads the transcript they name (the others only pass it on). */
const READS_TRANSCRIPT = new Set(['Stop', 'StopFailure', 'SubagentStop']);
const LINE = new RegExp(`^${FRAME_TAG} ([a-z0-9-]{1,40}) (\\d{1,6}) (\\d{1,6}) ([A-Za-z0-9+/]*={0,2})$`);

interface Pending {
  count: number;
  parts: (Buffer | undefined)[];
  have: number;
  bytes: number;
}

function inside(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

export class HookReceiver {
  private partial = '';
  private skipping = false;
  private readonly pending = new Map<string, Pending>();
  private pendingBytes = 0;
  private queue: Promise<void> = Promise.resolve();
  private readonly sessions = new Set<string>();
  private readonly requests = new Set<string>();
  private readonly worktree: string;
  private readonly claudeDir: string;
  /** Messages recorded, and refused (with why), for tests and the step's notes. */
  recorded = 0;
  readonly refused: string[] = [];

  constructor(private readonly target: HookChannelTarget) {
    this.worktree = realpath(target.worktree);
    this.claudeDir = realpath(target.claudeConfigDir);
  }

  /** Bytes as they come from the pipe. */
  push(chunk: Buffer): void {
    let text = this.partial + chunk.toString('latin1');
    let at = text.indexOf('\n');
    while (at >= 0) {
      const line = text.slice(0, at);
      if (!this.skipping) this.line(line);
      this.skipping = false;
      text = text.slice(at + 1);
      at = text.indexOf('\n');
    }
    // A line longer than any the hook writes is not a frame: dropped up to its end.
    if (text.length >= MAX_LINE_BYTES) {
      this.skipping = true;
      text = '';
    }
    this.partial = text;
  }

  /** Waits until every complete message has been recorded. */
  async settled(): Promise<void> {
    await this.queue;
  }

  private refuse(why: string): void {
    if (this.refused.length < 100) this.refused.push(why);
    logFailure(this.target.home, `hook channel: ${why}`);
  }

  private line(line: string): void {
    const m = LINE.exec(line);
    if (!m) {
      this.refuse('a line that is not a frame was dropped');
      return;
    }
    const [, id, seqText, countText, data] = m as unknown as [string, string, string, string, string];
    const seq = Number(seqText);
    const count = Number(countText);
    if (count < 1 || count > MAX_CHUNKS || seq >= count) {
      this.refuse('a frame with impossible numbers was dropped');
      return;
    }
    let entry = this.pending.get(id);
    if (!entry) {
      entry = { count, parts: new Array<Buffer | undefined>(count), have: 0, bytes: 0 };
      this.pending.set(id, entry);
    }
    if (entry.count !== count || entry.parts[seq]) {
      this.drop(id, 'a frame that contradicts its message');
      return;
    }
    const part = Buffer.from(data, 'base64');
    entry.parts[seq] = part;
    entry.have++;
    entry.bytes += part.length;
    this.pendingBytes += part.length;
    if (entry.bytes > MAX_MESSAGE_BYTES) {
      this.drop(id, `a message over ${MAX_MESSAGE_BYTES} bytes`);
      return;
    }
    if (entry.have === entry.count) {
      this.forget(id);
      const payload = Buffer.concat(entry.parts as Buffer[]);
      this.queue = this.queue.then(() => this.message(payload));
      return;
    }
    while (this.pending.size > MAX_PENDING || this.pendingBytes > MAX_PENDING_BYTES)
      this.drop(this.pending.keys().next().value!, 'too many unfinished messages');
  }

  private forget(id: string): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pendingBytes -= entry.bytes;
    this.pending.delete(id);
  }

  private drop(id: string, why: string): void {
    this.forget(id);
    this.refuse(`${why} was dropped`);
  }

  private async message(payload: Buffer): Promise<void> {
    try {
      const event = await this.admit(JSON.parse(payload.toString('utf8')) as unknown);
      if (typeof event === 'string') {
        this.refuse(event);
        return;
      }
      await recordEvent(event.event, { home: this.target.home, env: { ATLAS_CLAUDE_LAUNCHED: '1' } }, event.denied, {
        owns: (dir) => this.requests.has(dir),
        adopt: (dir) => {
          if (this.requests.size < MAX_REQUESTS) this.requests.add(dir);
        },
      });
      this.sessions.add(event.event.session_id);
      this.recorded++;
    } catch (error) {
      this.refuse(`an event was not recorded (${(error as Error).message})`);
    }
  }

  /** The event a message carries when it may be recorded; otherwise why not. */
  private async admit(data: unknown): Promise<{ event: ClaudeHookEvent; denied: string | undefined } | string> {
    const m = data as Partial<ChannelMessage> | null;
    if (typeof m !== 'object' || m === null || m.v !== 1 || typeof m.input !== 'string' || typeof m.cwd !== 'string')
      return 'a message of the wrong shape was dropped';
    if (m.denied !== undefined && typeof m.denied !== 'string') return 'a message of the wrong shape was dropped';
    const event = parseHookEvent(m.input, m.cwd);
    if (!isAbsolute(event.cwd) || !inside(realpath(event.cwd), this.worktree))
      return `an event from ${JSON.stringify(event.cwd.slice(0, 200))}, outside the task's worktree, was dropped`;
    const known = readSessionEntry(this.target.home, event.session_id);
    if (
      known &&
      known.task_dir !== this.target.taskDir &&
      !this.sessions.has(event.session_id) &&
      !(known.task_dir === null && event.session_id === this.target.session)
    )
      return `an event of session ${event.session_id.slice(0, 100)}, not this task's, was dropped`;
    if (this.requests.size >= MAX_REQUESTS && event.hook_event_name === 'UserPromptSubmit')
      return `over ${MAX_REQUESTS} requests: a prompt was dropped`;
    for (const key of ['transcript_path', 'agent_transcript_path'] as const) {
      const path = event[key];
      if (path !== undefined && !(await this.transcript(path, READS_TRANSCRIPT.has(event.hook_event_name)))) delete event[key];
    }
    return { event, denied: m.denied };
  }

  /**
   * A transcript atlas may read: a regular file inside Claude Code's config folder. Claude Code may
   * fire a short session's Stop before it has made the file: one not there yet is waited for, briefly.
   */
  private async transcript(path: string, wait: boolean): Promise<boolean> {
    if (!isAbsolute(path)) return false;
    for (const deadline = Date.now() + (wait ? TRANSCRIPT_WAIT_MS : 0); ; await new Promise((r) => setTimeout(r, 25))) {
      const real = realpath(path);
      if (!inside(real, this.claudeDir)) return false;
      try {
        return statSync(real).isFile();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || Date.now() >= deadline) return false;
      }
    }
  }
}
