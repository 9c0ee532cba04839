// Looks a program up on PATH without spawning anything (to fail early with a useful message).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

export function findExecutable(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates =
    isAbsolute(name) || name.includes('/')
      ? [name]
      : (env['PATH'] ?? '')
          .split(delimiter)
          .filter(Boolean)
          .map((dir) => join(dir, name));
  for (const path of candidates) {
    try {
      if (!statSync(path).isFile()) continue;
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not here.
    }
  }
  return undefined;
}
