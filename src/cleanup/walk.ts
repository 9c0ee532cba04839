// Every non-directory entry under a folder (depth first, never following symlinks; folders that
// vanish or cannot be read are passed over: cleanup reports what it finds, it never fails on it).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export function* entriesUnder(root: string, recurse = true): Generator<{ dir: string; name: string }> {
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) {
        if (recurse) stack.push(join(dir, entry.name));
      } else {
        yield { dir, name: entry.name };
      }
    }
  }
}
