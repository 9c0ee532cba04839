// Reading JSON files at the edge: a missing or broken file gets an error naming the file and the fix.
import { readFileSync } from 'node:fs';
import { AtlasError, EXIT } from '../domain/errors.js';

export function readTextFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new AtlasError(`${path} does not exist`, { exitCode: EXIT.notFound });
    throw new AtlasError(`cannot read ${path}: ${(error as Error).message}`, { exitCode: EXIT.input, cause: error });
  }
}

export function parseJsonText(path: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new AtlasError(`${path} is not valid JSON: ${(error as Error).message}`, {
      exitCode: EXIT.input,
      hint: 'restore it from a backup (atlas writes it atomically, so a broken file was edited or damaged outside atlas)',
      cause: error,
    });
  }
}

export function readJsonFile(path: string): unknown {
  return parseJsonText(path, readTextFile(path));
}

export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
