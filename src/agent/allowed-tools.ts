// What Claude Code may do without asking, on top of its permission mode (acceptEdits allows file
// edits only): config ai.allowed_tools, the step's allowed_tools and, by default, what atlas's own
// templates tell the agent to run: the task's validation commands and `atlas checkpoint`. Without
// them, a headless run is refused those commands (they are then listed as permission denials).
import type { Config } from '../config/schema.js';
import type { Task } from '../domain/task.js';
import type { AiStep } from '../domain/template.js';
import { resolveValidationCommands } from '../templates/detect-validation.js';

/** A command and any arguments after it, as a Claude Code Bash permission pattern. */
export function bashPrefix(command: string): string {
  return `Bash(${command.trim()}:*)`;
}

export function allowedToolsFor(
  step: Pick<AiStep, 'allowed_tools'>,
  task: Pick<Task, 'steps' | 'worktree'>,
  config: Pick<Config, 'ai' | 'validation'>,
): string[] {
  const tools = [...config.ai.allowed_tools, ...(step.allowed_tools ?? [])];
  if (config.ai.default_allowed_tools) {
    tools.push(bashPrefix('atlas checkpoint'));
    for (const s of task.steps) {
      if (s.type !== 'validation') continue;
      try {
        for (const command of resolveValidationCommands(s.commands, config.validation.commands, task.worktree).commands)
          tools.push(bashPrefix(command));
      } catch {
        // No commands found: the validation step itself will say so when it runs.
      }
    }
  }
  return [...new Set(tools.map((t) => t.trim()).filter((t) => t.length > 0))];
}
