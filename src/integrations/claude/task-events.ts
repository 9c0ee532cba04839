// The task side of an event beyond the heartbeat (loaded only for the events that need it):
// files touched, commits, last output, tokens into the ledger, and SessionStart's priming.
import { existsSync, readFileSync } from 'node:fs';
import { transcriptUsage } from '../../conversation/claude-transcript-usage.js';
import { readHookFile } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import { editedFiles, isGitCommitCommand, newFiles } from './edit-tools.js';
import type { ClaudeHookEvent } from './event.js';
import { releaseSessionOwner } from './heartbeat.js';
import { recordSessionUsage } from './ledger.js';
import { primingContext, shouldPrime } from './prime.js';
import type { SessionEntry } from './session-map.js';
import type { TaskLink } from './task-feed.js';
import { recordCommit, recordFiles, recordLastOutput } from './task-feed.js';
import { waitForFinalMessage } from './transcript-complete.js';

export interface TaskFeedInput {
  event: ClaudeHookEvent;
  entry: SessionEntry;
  link: TaskLink;
  requestDir: string | undefined;
  home: string;
  now: Date;
}

function readHook(link: TaskLink) {
  try {
    return readHookFile(taskFiles(link.ref.dir).hook);
  } catch {
    return undefined;
  }
}

async function ledger(input: TaskFeedInput, status: 'running' | 'completed'): Promise<void> {
  const { event, entry, link } = input;
  // A Claude Code atlas launched is counted from its stream; counting here too would double it.
  if (entry.launched_by_atlas || !event.transcript_path || !existsSync(event.transcript_path)) return;
  if (event.hook_event_name === 'Stop') await waitForFinalMessage(event.transcript_path, event.last_assistant_message);
  await recordSessionUsage({
    taskDir: link.ref.dir,
    taskId: link.ref.id,
    sessionId: event.session_id,
    hook: readHook(link),
    usage: transcriptUsage(event.transcript_path),
    startedAt: entry.started_at,
    at: input.now.toISOString(),
    status,
  });
}

export async function taskFeed(input: TaskFeedInput): Promise<string | undefined> {
  const { event, link, home } = input;
  switch (event.hook_event_name) {
    case 'PostToolUse': {
      await recordFiles(link, home, newFiles(link, editedFiles(link, event.tool_name, event.tool_input)));
      const command = event.tool_name === 'Bash' ? event.tool_input?.['command'] : undefined;
      if (typeof command === 'string' && isGitCommitCommand(command)) await recordCommit(link, home);
      return undefined;
    }
    case 'Stop':
      if (event.last_assistant_message) await recordLastOutput(link, home, event.last_assistant_message);
      await ledger(input, 'running');
      return undefined;
    case 'SessionEnd':
      await releaseSessionOwner(link, event.session_id);
      await ledger(input, 'completed');
      return undefined;
    case 'SessionStart': {
      if (input.entry.launched_by_atlas) return undefined;
      const hook = readHook(link);
      if (!hook || !shouldPrime(hook)) return undefined;
      let markdown: string;
      try {
        markdown = readFileSync(taskFiles(link.ref.dir).hookMarkdown, 'utf8');
      } catch {
        return undefined;
      }
      const additionalContext = primingContext(markdown, link.ref.id);
      return JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext } });
    }
    default:
      return undefined;
  }
}
