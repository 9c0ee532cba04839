// atlas demo [--dir DIR] [--home DIR]: atlas end to end in a few seconds (src/demo/run-demo.ts).

import { runDemo } from '../../demo/run-demo.js';
import { EXIT } from '../../domain/errors.js';
import type { CliContext } from '../context.js';

export default async function demo(ctx: CliContext, opts: { dir?: string; home?: string }): Promise<number> {
  const result = await runDemo({
    atlas: { node: process.execPath, script: process.argv[1]! },
    ...(opts.dir !== undefined ? { dir: opts.dir } : {}),
    ...(opts.home !== undefined ? { home: opts.home } : {}),
    say: (text) => ctx.out.line(text),
  });
  if (ctx.out.json) ctx.out.result(result, () => '');
  return result.ok ? EXIT.ok : EXIT.failure;
}
