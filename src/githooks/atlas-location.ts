// Where this atlas lives, for embedding in git hooks: hooks run with the user's git, often from a
// shell or GUI whose PATH has no `atlas`, so they call node and bin/atlas.cjs by absolute path.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { realpath } from '../git/locate.js';
import type { AtlasLocation } from './script.js';

const PACKAGE_NAME = 'atlas-runner';

/** The package root above `from` (this module's file, bundled or not). */
function packageRoot(from: string): string | undefined {
  let dir = dirname(from);
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const name = (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name;
        if (name === PACKAGE_NAME && existsSync(join(dir, 'bin', 'atlas.cjs'))) return dir;
      } catch {
        // Not ours or unreadable: keep looking upwards.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export function currentAtlasLocation(): AtlasLocation {
  const root = packageRoot(realpath(fileURLToPath(import.meta.url)));
  const cli = root ? join(root, 'bin', 'atlas.cjs') : realpath(process.argv[1] ?? '');
  return { node: process.execPath, cli };
}
