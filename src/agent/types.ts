// What an agent runner gets and returns. Claude Code (claude.ts) and any command-line agent
// (command-agent.ts) implement it.
import type { Config } from '../config/schema.js';
import type { ProcessGroups } from '../engine/processes.js';
import type { ProcessExecutor } from '../exec/types.js';
import type { HookChannelTarget } from '../integrations/claude/channel-receive.js';
import type { AgentUpdate, TokenUsage } from './claude-stream.js';

export interface AgentRunInput {
  prompt: string;
  /** Continue this agent session (Claude Code --resume) with `prompt` as the next message. */
  resumeSessionId?: string | undefined;
  /**
   * A new session's id, chosen by atlas (Claude Code --session-id): known before the agent says it,
   * so a run cut off at once can still be found in the agent's transcripts.
   */
  sessionId?: string | undefined;
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  ai: Config['ai'];
  /** Claude Code --allowedTools patterns (e.g. "Bash(npm test)"), on top of its permission mode. */
  allowedTools?: readonly string[];
  groups: ProcessGroups;
  /** How the agent's process starts (local or the task's sandbox). */
  executor: ProcessExecutor;
  /**
   * Where Claude Code's hooks hand their events when they cannot write $ATLAS_HOME themselves (the
   * sandbox): atlas records them from a pipe it owns (integrations/claude/channel-receive.ts).
   */
  hookChannel?: HookChannelTarget | undefined;
  /** Text to show the user as it comes. */
  onOutput(text: string, stream: 'stdout' | 'stderr'): void;
  /** Structured progress: session id, tool use (files), assistant text. */
  onUpdate(update: AgentUpdate): void;
}

export interface AgentRunResult {
  ok: boolean;
  exitCode: number;
  timedOut: boolean;
  /** Why it failed, for the hook and the user. */
  error?: string;
  sessionId?: string;
  /** The agent's final answer (Claude's result text, or a command agent's stdout). */
  output: string;
  /** Files the agent said it changed, relative to the working tree. */
  files: string[];
  usage?: TokenUsage;
  costUsd?: number;
  /** A configuration error no retry can fix, with its fix. */
  permanent?: { hint: string };
}
