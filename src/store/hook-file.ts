// hook.json on disk: validated on read, written atomically.
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import { HookFormatError, parseHook } from '../domain/hook-schema.js';
import { writeFileAtomic } from './atomic-write.js';
import { readJsonFile, toJson } from './json-file.js';

export function readHookFile(path: string): Hook {
  const data = readJsonFile(path);
  try {
    return parseHook(data);
  } catch (error) {
    if (error instanceof HookFormatError) {
      throw new AtlasError(`${path} is not a valid hook: ${error.message}`, {
        exitCode: EXIT.input,
        hint: 'fix the named field (see docs/hook-format.md), or restore the file from a backup',
        cause: error,
      });
    }
    throw error;
  }
}

export function writeHookFile(path: string, hook: Hook): void {
  writeFileAtomic(path, toJson(hook));
}
