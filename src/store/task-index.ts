// task_index: the per-task component of receipt key paths (DESIGN §7). Allocated under a lock
// from a counter that only grows, so no two tasks ever sign with the same keys.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';
import { toJson } from './json-file.js';
import { withLock } from './lock.js';
import { homePaths } from './paths.js';

interface Counter {
  next_task_index: number;
}

export async function allocateTaskIndex(home: string): Promise<number> {
  const path = homePaths(home).taskIndex;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  return withLock(path, () => {
    let counter: Counter = { next_task_index: 0 };
    if (existsSync(path)) counter = JSON.parse(readFileSync(path, 'utf8')) as Counter;
    const index = counter.next_task_index;
    // Non-hardened BIP32 indices stop at 2^31 - 1.
    if (!Number.isInteger(index) || index < 0 || index >= 0x7fffffff) {
      throw new Error(`${path} holds an invalid next_task_index (${String(index)})`);
    }
    writeFileAtomic(path, toJson({ next_task_index: index + 1 }));
    return index;
  });
}
