// Looks a program up on PATH without spawning anything (to fail early with a useful message).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

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
      // Most PATH entries lack the name: no exception made for each (the server looks up an agent per turn).
      if (!statSync(path, { throwIfNoEntry: false })?.isFile()) continue;
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * The program a shell command's first word names, found as /bin/sh finds it: a path (one with a
 * `/`) from `cwd`, a name on `env.PATH`; absolute, or undefined when there is none.
 */
export function findCommandProgram(word: string, cwd: string, env: NodeJS.ProcessEnv): string | undefined {
  const found = word.includes('/') ? findExecutable(resolve(cwd, word)) : findExecutable(word, env);
  return found === undefined ? undefined : resolve(cwd, found);
}
