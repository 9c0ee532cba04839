// Bytes a folder holds: the sizes of its files and symlinks (never following links), so a report of
// bytes freed adds up what deleting the folder gives back.
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function directorySize(path: string): number {
  let total = 0;
  const stack = [path];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        stack.push(full);
        continue;
      }
      try {
        total += lstatSync(full).size;
      } catch {
        // Vanished meanwhile: it frees nothing.
      }
    }
  }
  return total;
}

export function fileSize(path: string): number {
  try {
    return lstatSync(path).size;
  } catch {
    return 0;
  }
}
