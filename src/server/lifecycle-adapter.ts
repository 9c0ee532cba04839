// The server's LifecycleBus until the lifecycle runner (src/lifecycle/) lands: OnMessage records the
// message in the conversation's messages.jsonl (seed 000's default OnMessage), OnTerminate removes
// the sandbox workspace; OnColdStart and OnStreamFinish have no store to restore from or push to
// yet. Failures of the non-critical points are logged, never thrown (seed 001 9.2, 9.3).
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Message } from '../domain/conversation.js';
import { MESSAGES_FILE_NAME } from '../domain/conversation.js';
import type { LifecycleBus, LifecycleEvent } from '../lifecycle/types.js';
import type { LogFn } from './context.js';


export function createServerLifecycle(log: LogFn): LifecycleBus {
  const guarded = async (point: string, event: LifecycleEvent, fn: () => void) => {
    const started = Date.now();
    try {
      fn();
      log({ msg: 'lifecycle', point, conversation_id: event.conversation_id, ok: true, duration_ms: Date.now() - started });
    } catch (error) {
      log({ level: 'error', msg: 'lifecycle hook failed', point, conversation_id: event.conversation_id, error: (error as Error).message });
    }
  };
  return {
    async coldStart(event) {
      log({ msg: 'lifecycle', point: 'on_cold_start', conversation_id: event.conversation_id, reason: event.reason, ok: true });
    },
    message: (event) => guarded('on_message', event, () => appendFileSync(join(event.task_dir, MESSAGES_FILE_NAME), `${JSON.stringify(event.message)}\n`)),
    streamFinish: (event) => guarded('on_stream_finish', event, () => undefined),
    terminate: (event) => guarded('on_terminate', event, () => rmSync(event.workspace, { recursive: true, force: true })),
  };
}

/** The conversation's messages, oldest first (a torn last line is skipped). */
export function readMessages(dir: string): Message[] {
  let text = '';
  try {
    text = readFileSync(join(dir, MESSAGES_FILE_NAME), 'utf8');
  } catch {
    return [];
  }
  const out: Message[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as Message);
    } catch {
      // torn line
    }
  }
  return out;
}
