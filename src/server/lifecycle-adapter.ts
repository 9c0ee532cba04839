// The server's lifecycle buses (src/lifecycle/, issue 9): one per conversation turn (and one for a
// delete), so one conversation's slow hook never holds up another's. The builtins are the
// recording defaults (OnMessage records the message, OnStreamFinish the run's ledger row); the
// configuration's `lifecycle.*` commands follow them, each run a line in the conversation
// folder's lifecycle.log. OnColdStart failing throws (the request answers 502); the other points
// log and go on (seed 001 9.2, 9.3).
import type { Config } from '../config/schema.js';
import { listConversations, readMessages as readRunMessages } from '../conversation/read.js';
import { conversationFiles as runFiles } from '../conversation/paths.js';
import type { Message } from '../domain/conversation.js';
import { ProcessGroups } from '../engine/processes.js';
import { createLifecycleBus } from '../lifecycle/bus.js';
import { recordingBuiltins } from '../lifecycle/defaults.js';
import type { LifecycleBus } from '../lifecycle/types.js';
import type { LogFn } from './context.js';

export function serverLifecycle(config: Config, log: LogFn): () => LifecycleBus {
  return () =>
    createLifecycleBus({
      builtins: recordingBuiltins(),
      config: config.lifecycle,
      groups: new ProcessGroups(),
      reporter: { note: (text) => log({ msg: 'lifecycle', note: text }) },
    });
}

/** A server conversation's messages, oldest first: each turn's run, in the order they started. */
export function readMessages(dir: string): Message[] {
  return listConversations(dir).flatMap((run) => readRunMessages(runFiles(dir, run.id).messages));
}
