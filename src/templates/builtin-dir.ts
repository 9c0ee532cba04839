// The built-in templates/ folder shipped with atlas. The code runs from src/ (tests), dist/cli.js
// or dist/chunks/*.js, so walk up from this module to the package root (the folder holding
// package.json) instead of assuming a fixed depth.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined | null = null;

export function builtinTemplatesDir(): string | undefined {
  if (cached !== null) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'templates'))) {
      cached = join(dir, 'templates');
      return cached;
    }
    const parent = dirname(dir);
    if (parent === dir) {
      cached = undefined;
      return cached;
    }
    dir = parent;
  }
}
