// The four lifecycle points around an agent run (seeds 000 and 001, DESIGN §9) and the data each
// receives. The runner (src/lifecycle/) executes the built-in defaults and the user's commands;
// callers (the ai step, the task runner, the server) only emit. Criticality is the seeds' matrix:
// OnColdStart failing stops the agent before it starts; the other three log and continue.
import type { Message } from '../domain/conversation.js';

export const LIFECYCLE_POINTS = ['on_cold_start', 'on_message', 'on_stream_finish', 'on_terminate'] as const;
export type LifecyclePoint = (typeof LIFECYCLE_POINTS)[number];

/** Tokens of one agent run as the stream reported them (null: unknown, e.g. a run cut off). */
export interface StreamUsage {
  input_tokens: number;
  output_tokens: number | null;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  cost_usd: number | null;
  partial: boolean;
}

/** What every hook receives (as JSON on stdin for user commands). */
export interface LifecycleBase {
  task_id: string;
  step_name: string | null;
  /** The agent conversation, when the point belongs to one. */
  conversation_id: string | null;
  /** The task's working tree. */
  workspace: string;
  /** The task's folder under ATLAS_HOME. */
  task_dir: string;
}

export type LifecycleEvent =
  | (LifecycleBase & { point: 'on_cold_start'; reason: 'new_workspace' | 'resumed' })
  | (LifecycleBase & { point: 'on_message'; message: Message })
  | (LifecycleBase & { point: 'on_stream_finish'; ok: boolean; usage: StreamUsage | null; error: string | null })
  | (LifecycleBase & { point: 'on_terminate'; reason: 'completed' | 'failed' | 'abandoned' | 'workspace_removed' });

/**
 * The seam callers use. `coldStart` throws (an AtlasError naming the hook that failed and why)
 * when a critical hook fails; the others never throw.
 */
export interface LifecycleBus {
  coldStart(event: Extract<LifecycleEvent, { point: 'on_cold_start' }>): Promise<void>;
  message(event: Extract<LifecycleEvent, { point: 'on_message' }>): Promise<void>;
  streamFinish(event: Extract<LifecycleEvent, { point: 'on_stream_finish' }>): Promise<void>;
  terminate(event: Extract<LifecycleEvent, { point: 'on_terminate' }>): Promise<void>;
}

/** Where the lifecycle tells people of a hook's failure: the note of a task's reporter. */
export interface LifecycleNotes {
  note(text: string): void;
}
