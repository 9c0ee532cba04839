// `atlas claude-hook`: one Claude Code hook event on stdin, handled in one short process.
// Exit codes (seed 004, docs/claude-code.md): 0 handled (a guard denial is a JSON decision on
// stdout); 2 blocks the tool call, with the reason on stderr, when the guard itself could not
// judge it; 1 is non-blocking: bad input, an I/O failure (logged in
// $ATLAS_HOME/claude/hook-errors.log) or a bug in atlas, always as one line on stderr, never a
// stack trace in the agent's context.
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { AtlasError } from '../../domain/errors.js';
import { atlasHome } from '../../store/paths.js';
import { EventInputError, parseHookEvent } from './event.js';
import { BlockingError, handleEvent } from './handle.js';
import { claudePaths } from './places.js';

export const HOOK_EXIT = { ok: 0, nonBlocking: 1, block: 2 } as const;

/** All of stdin, read synchronously: process.stdin's stream machinery costs more to load. */
function readStdin(): string {
  return readFileSync(0, 'utf8');
}

/** I/O trouble (disk, permissions, a lock held too long) rather than a bug in atlas. */
export function isIoFailure(error: unknown): boolean {
  if (error instanceof AtlasError) return true;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 500);
}

export function logFailure(home: string, line: string): void {
  try {
    const log = claudePaths(home).errorLog;
    mkdirSync(dirname(log), { recursive: true });
    appendFileSync(log, `${new Date().toISOString()} ${line}\n`);
  } catch {
    // Nowhere to log: stderr still has the line.
  }
}

export interface HookIo {
  input: string;
  env: NodeJS.ProcessEnv;
  cwd: string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** Handles one event; returns the exit code. Never throws. */
export async function runHookOnce(io: HookIo): Promise<number> {
  const home = atlasHome(io.env);
  const fail = (code: number, line: string, log = true) => {
    io.stderr(`atlas claude-hook: ${oneLine(line)}\n`);
    if (log) logFailure(home, line);
    return code;
  };
  let event: ReturnType<typeof parseHookEvent>;
  try {
    event = parseHookEvent(io.input, io.cwd);
  } catch (error) {
    return fail(HOOK_EXIT.nonBlocking, (error as Error).message);
  }
  const what = `${event.hook_event_name}${event.tool_name ? ` ${event.tool_name}` : ''}`;
  try {
    const out = await handleEvent(event, { home, env: io.env });
    if (out.stdout) io.stdout(`${out.stdout}\n`);
    if (out.recordError)
      logFailure(
        home,
        `${what}: recording failed after the decision: ${oneLine((out.recordError as Error).message ?? String(out.recordError))}`,
      );
    return HOOK_EXIT.ok;
  } catch (error) {
    const failure = classifyFailure(error, what);
    return fail(failure.code, failure.line, failure.log);
  }
}

/** Exit code and the one line to print for a failure while handling an event. */
export function classifyFailure(error: unknown, what: string): { code: number; line: string; log: boolean } {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof BlockingError) return { code: HOOK_EXIT.block, line: message, log: false };
  if (error instanceof EventInputError) return { code: HOOK_EXIT.nonBlocking, line: message, log: true };
  if (isIoFailure(error)) return { code: HOOK_EXIT.nonBlocking, line: `${what}: not recorded (${message})`, log: true };
  const name = error instanceof Error ? error.name : 'Error';
  return {
    code: HOOK_EXIT.nonBlocking,
    line: `${what}: internal error, not recorded (${name}: ${message}); the session goes on`,
    log: true,
  };
}

export async function runClaudeHook(): Promise<number> {
  let input: string;
  try {
    input = readStdin();
  } catch (error) {
    process.stderr.write(`atlas claude-hook: cannot read stdin (${oneLine((error as Error).message)})\n`);
    return HOOK_EXIT.nonBlocking;
  }
  return runHookOnce({
    input,
    env: process.env,
    cwd: process.cwd(),
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
  });
}
