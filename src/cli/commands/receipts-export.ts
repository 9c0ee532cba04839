// atlas receipts export [--task ID]... [--out FILE]: a JSON bundle of receipts for CI.
import { dirname, resolve } from 'node:path';
import { EXIT } from '../../domain/errors.js';
import { requireTask } from '../../hook/resolve-task.js';
import { exportBundle } from '../../receipts/export.js';
import { SHARED_FILE_MODE, writeFileAtomic } from '../../store/atomic-write.js';
import { toJson } from '../../store/json-file.js';
import { findTaskRef } from '../../store/task-store.js';
import type { CliContext } from '../context.js';
import { mkdirForPerson } from '../../store/private-umask.js';

declare const ATLAS_VERSION: string;

export default async function receiptsExport(ctx: CliContext, opts: { task?: string[]; out?: string }): Promise<number> {
  const ids = opts.task ?? [];
  const refs = ids.length > 0
    ? ids.map((id) => findTaskRef(id, ctx.home))
    : [requireTask({ cwd: ctx.cwd, home: ctx.home, includeEnded: true }).ref];
  const config = await ctx.config();
  const version = typeof ATLAS_VERSION === 'string' ? ATLAS_VERSION : undefined;
  const bundle = await exportBundle(refs, ctx.home, config.hooks.key_derivation, new Date(), version);
  const receipts = bundle.tasks.reduce((n, t) => n + t.receipts.length, 0);
  if (!opts.out) {
    process.stdout.write(toJson(bundle));
    return EXIT.ok;
  }
  const out = resolve(ctx.cwd, opts.out);
  mkdirForPerson(dirname(out));
  writeFileAtomic(out, toJson(bundle), { mode: SHARED_FILE_MODE });
  const summary = { out, tasks: bundle.tasks.map((t) => t.task_id), receipts, xpub_fingerprint: bundle.xpub_fingerprint };
  ctx.out.result(summary, () =>
    `wrote ${opts.out}: ${receipts} receipt${receipts === 1 ? '' : 's'} of ${summary.tasks.join(', ')} (key ${bundle.xpub_fingerprint})\n` +
    `verify it with: atlas verify ${opts.out} --xpub "$(atlas key export)"`,
  );
  return EXIT.ok;
}
