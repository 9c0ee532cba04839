// Before atlas runs git on a task, the task's HEAD must name the task's branch: a step that
// pointed it at refs/heads/main would have recovery's `git reset --hard` move main. Read from the
// file (no git runs before this check), and refused with the file's content when it differs.
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';

export function checkTaskHead(gitDir: string, branch: string): void {
  const path = join(gitDir, 'HEAD');
  let text: string;
  try {
    if (!lstatSync(path).isFile()) throw new Error('not a regular file');
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw headError(path, branch, `it cannot be read as a file (${error instanceof Error ? error.message : String(error)})`);
  }
  if (text !== `ref: refs/heads/${branch}`) throw headError(path, branch, `it says "${text.slice(0, 200)}"`);
}

function headError(path: string, branch: string, what: string): AtlasError {
  return new AtlasError(`the task's HEAD (${path}) no longer names its branch ${branch}: ${what}; atlas runs no git on this task`, {
    exitCode: EXIT.failure,
    hint: `a step may have rewritten it: look at the file; if you did not change it, restore it (printf 'ref: refs/heads/${branch}\\n' > ${path}), then \`atlas recover\``,
  });
}
