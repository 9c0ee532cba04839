// One user hook command: /bin/sh -c in the workspace, the event as JSON on stdin, a timeout.
// Its whole process group ends with it (runProcess), so a timed-out hook leaves nothing running.
import { existsSync } from 'node:fs';
import type { ProcessGroups } from '../engine/processes.js';
import { runProcess } from '../engine/processes.js';
import type { HookRunOutcome } from './log.js';
import type { LifecycleEvent } from './types.js';

const STDERR_TAIL_CHARS = 1000;

export interface CommandRun {
  outcome: HookRunOutcome;
  durationMs: number;
  exitCode?: number;
  /** Why it failed, in one line (absent when ok). */
  error?: string;
  stderrTail?: string;
}

/** The last lines of a command's error output, at most STDERR_TAIL_CHARS characters. */
export function tail(text: string, max = STDERR_TAIL_CHARS): string {
  const trimmed = text.trimEnd();
  return trimmed.length <= max ? trimmed : `…${trimmed.slice(trimmed.length - max + 1)}`;
}

/** Variables a hook command gets besides its stdin (handy for one-line shell hooks). */
export function hookEnv(event: LifecycleEvent, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...base,
    ATLAS_HOOK_POINT: event.point,
    ATLAS_TASK_ID: event.task_id,
    ATLAS_STEP: event.step_name ?? '',
    ATLAS_CONVERSATION_ID: event.conversation_id ?? '',
    ATLAS_WORKSPACE: event.workspace,
    ATLAS_TASK_DIR: event.task_dir,
  };
}

export async function runHookCommand(
  command: string,
  event: LifecycleEvent,
  options: { timeoutMs: number; groups: ProcessGroups; env: NodeJS.ProcessEnv },
): Promise<CommandRun> {
  const started = Date.now();
  // A removed workspace (OnTerminate after cleanup) cannot be the working directory.
  const cwd = existsSync(event.workspace) ? event.workspace : event.task_dir;
  try {
    const result = await runProcess({
      command,
      shell: true,
      cwd,
      env: hookEnv(event, options.env),
      input: `${JSON.stringify(event)}\n`,
      timeoutMs: options.timeoutMs,
      capture: true,
      groups: options.groups,
    });
    const stderrTail = tail(result.stderr.toString('utf8'));
    if (result.timedOut) {
      return {
        outcome: 'timeout',
        durationMs: result.durationMs,
        exitCode: result.exitCode,
        error: `timed out after ${options.timeoutMs} ms`,
        ...(stderrTail ? { stderrTail } : {}),
      };
    }
    if (result.exitCode !== 0) {
      const how = result.signal ? `killed by ${result.signal}` : `exit code ${result.exitCode}`;
      return {
        outcome: 'failed',
        durationMs: result.durationMs,
        exitCode: result.exitCode,
        error: how,
        ...(stderrTail ? { stderrTail } : {}),
      };
    }
    return { outcome: 'ok', durationMs: result.durationMs, exitCode: 0 };
  } catch (error) {
    return { outcome: 'failed', durationMs: Date.now() - started, error: `could not start: ${(error as Error).message}` };
  }
}
