// The server's LifecycleBus until the lifecycle runner (src/lifecycle/) lands: issue 9's recording
// defaults (OnMessage records the message, OnStreamFinish the run's ledger row), OnColdStart with
// no store to restore from yet, OnTerminate removing the sandbox workspace. Failures of the
// non-critical points are logged, never thrown (seed 001 9.2, 9.3).
import { rmSync } from 'node:fs';
import { builtinLifecycleBus } from '../conversation/bus.js';
import { conversationFiles as runFiles } from '../conversation/paths.js';
import { listConversations, readMessages as readRunMessages } from '../conversation/read.js';
import type { Message } from '../domain/conversation.js';
import type { LifecycleBus } from '../lifecycle/types.js';
import type { LogFn } from './context.js';

export function createServerLifecycle(log: LogFn): LifecycleBus {
  const recording = builtinLifecycleBus((point, error) => log({ level: 'error', msg: 'lifecycle hook failed', point, error: (error as Error).message }));
  return {
    ...recording,
    async coldStart(event) {
      log({ msg: 'lifecycle', point: 'on_cold_start', conversation_id: event.conversation_id, reason: event.reason });
    },
    async terminate(event) {
      try {
        rmSync(event.workspace, { recursive: true, force: true });
        log({ msg: 'lifecycle', point: 'on_terminate', conversation_id: event.conversation_id });
      } catch (error) {
        log({ level: 'error', msg: 'lifecycle hook failed', point: 'on_terminate', conversation_id: event.conversation_id, error: (error as Error).message });
      }
    },
  };
}

/** A server conversation's messages, oldest first: each turn's run, in the order they started. */
export function readMessages(dir: string): Message[] {
  return listConversations(dir).flatMap((run) => readRunMessages(runFiles(dir, run.id).messages));
}
