// Bytes a folder holds: the sizes of its files and symlinks (never following links), so a report of
// bytes freed adds up what deleting the folder gives back.
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { entriesUnder } from './walk.js';

export function directorySize(path: string): number {
  let total = 0;
  for (const { dir, name } of entriesUnder(path)) total += fileSize(join(dir, name));
  return total;
}

/** 0 for a file that vanished meanwhile: it frees nothing. */
export function fileSize(path: string): number {
  try {
    return lstatSync(path).size;
  } catch {
    return 0;
  }
}
