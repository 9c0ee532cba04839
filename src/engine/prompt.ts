// Placeholders in prompts, commit messages and PR commands (docs/templates.md):
// {{description}}, {{task_id}}, {{branch}}, {{worktree}}, and {{outputs.<step>}} for the final
// output of an earlier AI step. Unknown placeholders are left as written.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '../domain/task.js';

/** Where an AI step's latest final output is kept, relative to the task directory. */
export function stepOutputPath(stepName: string): string {
  return join('artifacts', stepName, 'output.md');
}

export function fillPlaceholders(text: string, task: Task, taskDir: string): string {
  return text.replace(/\{\{\s*([A-Za-z_]+)(?:\.([A-Za-z0-9_-]+))?\s*\}\}/g, (whole, key: string, sub: string | undefined) => {
    if (sub === undefined) {
      switch (key) {
        case 'description':
          return task.description;
        case 'task_id':
          return task.id;
        case 'branch':
          return task.branch;
        case 'worktree':
          return task.worktree;
        default:
          return whole;
      }
    }
    if (key !== 'outputs') return whole;
    try {
      return readFileSync(join(taskDir, stepOutputPath(sub)), 'utf8').trim();
    } catch {
      return `(step "${sub}" left no output)`;
    }
  });
}
