// Is the configured agent usable? Checked before a task starts and before each AI step, so a
// missing agent is a clear error that says how to configure one, not a cryptic spawn failure.
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import { findExecutable } from './find-executable.js';

const HOW_TO_CONFIGURE =
  'install Claude Code (npm install -g @anthropic-ai/claude-code, then run `claude` once to log in), ' +
  'or use any other agent CLI: set ai.agent: command and ai.command: "my-agent --prompt {prompt}" in .atlas/config.yaml ' +
  '(or pass -c ai.agent=command -c ai.command=...); the prompt also arrives on stdin and in $ATLAS_PROMPT';

export function assertAgentConfigured(ai: Config['ai'], env: NodeJS.ProcessEnv = process.env): void {
  if (ai.agent === 'command') {
    if (ai.command.trim().length === 0) {
      throw new AtlasError('ai.agent is "command" but ai.command is empty', { exitCode: EXIT.input, hint: HOW_TO_CONFIGURE });
    }
    return;
  }
  if (!findExecutable('claude', env)) {
    throw new AtlasError('the AI agent is not available: Claude Code (`claude`) is not installed or not on PATH', {
      exitCode: EXIT.input,
      hint: HOW_TO_CONFIGURE,
    });
  }
}
