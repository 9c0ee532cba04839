// The built-in lifecycle defaults of a conversation: OnMessage records the message, OnStreamFinish
// records the usage and closes the conversation. Events find their conversation by its id among
// the ones open in this process (an agent run opens one, its end closes it).
//
// The lifecycle runner (src/lifecycle/) composes them with the user's commands:
//   const defaults = recordingDefaults();
//   message:      async (e) => { await defaults.message(e); ...user on_message commands... }
//   streamFinish: async (e) => { await defaults.streamFinish(e); ...user on_stream_finish commands... }
// The defaults do their I/O synchronously when called, so calling them first (before any await)
// keeps the files in step with the stream; they throw on failure, for the runner to log.
import type { LifecycleBus, LifecycleEvent } from '../lifecycle/types.js';
import type { ConversationRecorder } from './recorder.js';

type MessageEvent = Extract<LifecycleEvent, { point: 'on_message' }>;
type StreamFinishEvent = Extract<LifecycleEvent, { point: 'on_stream_finish' }>;

const open = new Map<string, { recorder: ConversationRecorder; interrupted: boolean }>();

export function openConversation(recorder: ConversationRecorder): void {
  open.set(recorder.id, { recorder, interrupted: false });
}

/** The run was stopped by a signal: its stream finish records it as interrupted, not failed. */
export function markInterrupted(id: string): void {
  const entry = open.get(id);
  if (entry) entry.interrupted = true;
}

/** Forgets the conversation (after its stream finished, or when the run could not finish it). */
export function closeConversation(id: string): void {
  open.delete(id);
}

export interface RecordingDefaults {
  message(event: MessageEvent): Promise<void>;
  streamFinish(event: StreamFinishEvent): Promise<void>;
}

export function recordingDefaults(): RecordingDefaults {
  return {
    message: async (event) => {
      if (event.conversation_id) open.get(event.conversation_id)?.recorder.recordMessage(event.message);
    },
    streamFinish: async (event) => {
      if (!event.conversation_id) return;
      const entry = open.get(event.conversation_id);
      if (!entry) return;
      entry.recorder.finish(event.ok ? 'completed' : entry.interrupted ? 'interrupted' : 'failed');
      closeConversation(event.conversation_id);
    },
  };
}

/**
 * The bus until user commands exist: the recording defaults, OnColdStart and OnTerminate doing
 * nothing. A failing default is reported through `onError` and never fails the step (seeds' matrix).
 */
export function builtinLifecycleBus(onError: (point: string, error: unknown) => void = () => {}): LifecycleBus {
  const defaults = recordingDefaults();
  return {
    coldStart: async () => {},
    message: async (event) => {
      try {
        await defaults.message(event);
      } catch (error) {
        onError('on_message', error);
      }
    },
    streamFinish: async (event) => {
      try {
        await defaults.streamFinish(event);
      } catch (error) {
        onError('on_stream_finish', error);
      }
    },
    terminate: async () => {},
  };
}
