// Entry of dist/quick.cjs (bin/atlas.cjs): the fast path's commands in one CommonJS file, which
// Node loads without the ES module loader or a chunk per shared module (docs/performance.md).

import { enterPrivateUmask } from '../store/private-umask.js';
import { quickCommand } from './quick.js';
import { runHandler } from './run-handler.js';

/** Runs argv's command when the fast path understands it; false sends it to the full CLI. */
export async function runQuick(argv: string[]): Promise<boolean> {
  const quick = quickCommand(argv);
  if (!quick) return false;
  enterPrivateUmask();
  await runHandler(quick.flags, quick.load, quick.args);
  return true;
}
