// The CLI run as `nobody` by tests that need a user who is not root (root reads and writes
// everything): a copy of the build that `nobody` may read, outside root's folders.
import { chmodSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './engine-fixtures.js';
import { scratch } from './sync-fixtures.js';

/** Copies bin/ and dist/ to a folder everyone may read; the path of the copy's bin/atlas.cjs. */
export function cliCopyForNobody(): string {
  const copy = scratch('atlas-cli-copy-');
  chmodSync(copy, 0o755);
  cpSync(join(ROOT, 'bin'), join(copy, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true, filter: (src) => !src.endsWith('.map') });
  return join(copy, 'bin', 'atlas.cjs');
}
