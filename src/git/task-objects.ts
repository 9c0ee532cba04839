// The object stores of one task, beside the repository's own (DESIGN §9, issue 34). A sandboxed
// step reads the repository's objects read-only (as an alternate) and writes its new ones into
// `objects/` of the task folder: nothing outside the sandbox reads that store as objects, save the
// crossing (cross-objects.ts), which recomputes every hash. atlas's own trees of a task's
// uncommitted files (pristine validation) go to `work-objects/`, also the task's own, so another
// task's step never sees them in the shared store.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** Where a sandboxed step of the task writes its objects (writable in its sandbox). */
export function stepObjectDir(taskDir: string): string {
  return join(taskDir, 'objects');
}

/** Where atlas writes objects of a task's uncommitted files (never in the shared store). */
export function workObjectDir(taskDir: string): string {
  return join(taskDir, 'work-objects');
}

/** Makes an empty object store (0700) and returns its path. */
export function ensureObjectDir(dir: string): string {
  for (const sub of ['pack', 'info']) mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 });
  return dir;
}

/** Git's environment for a store of its own over the repository's: new objects land in `store`. */
export function overlayEnv(common: string, store: string): Record<string, string> {
  return { GIT_OBJECT_DIRECTORY: store, GIT_ALTERNATE_OBJECT_DIRECTORIES: join(common, 'objects') };
}
