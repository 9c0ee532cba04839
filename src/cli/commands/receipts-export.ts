// atlas receipts export [--task ID]... [--out FILE] [--format atlas|in-toto]: a JSON bundle of
// receipts for CI, or DSSE envelopes of in-toto Statements (one per line) for supply-chain tools.
import { dirname, resolve } from 'node:path';
import { EXIT } from '../../domain/errors.js';
import { requireTask } from '../../hook/resolve-task.js';
import { exportBundle } from '../../receipts/export.js';
import { SHARED_FILE_MODE, writeFileAtomic } from '../../store/atomic-write.js';
import { toJson } from '../../store/json-file.js';
import { mkdirForPerson } from '../../store/private-umask.js';
import type { TaskRef } from '../../store/task-store.js';
import { findTaskRef } from '../../store/task-store.js';
import type { CliContext } from '../context.js';

declare const ATLAS_VERSION: string;

interface ExportOptions {
  task?: string[];
  out?: string;
  format?: 'atlas' | 'in-toto';
}

function write(ctx: CliContext, out: string, text: string): string {
  const path = resolve(ctx.cwd, out);
  mkdirForPerson(dirname(path));
  writeFileAtomic(path, text, { mode: SHARED_FILE_MODE });
  return path;
}

async function exportInToto(ctx: CliContext, refs: TaskRef[], opts: ExportOptions): Promise<number> {
  const config = await ctx.config();
  const { exportAttestations } = await import('../../receipts/attestation-export.js');
  const result = await exportAttestations(refs, ctx.home, config.hooks.key_derivation);
  const skippedNote =
    result.skipped.length > 0
      ? `not attested: ${result.skipped.length} receipt${result.skipped.length === 1 ? '' : 's'} not made on a clean commit (${result.skipped
          .slice(0, 3)
          .map((s) => `${s.receipt_id}: ${s.reason}`)
          .join('; ')}${result.skipped.length > 3 ? '; …' : ''})`
      : undefined;
  if (!opts.out) {
    process.stdout.write(result.text);
    if (skippedNote) process.stderr.write(`atlas: ${skippedNote}\n`);
    return EXIT.ok;
  }
  const out = write(ctx, opts.out, result.text);
  const { text: _text, ...summary } = result;
  ctx.out.result(
    { out, ...summary },
    () =>
      `wrote ${opts.out}: ${result.envelopes} attestation${result.envelopes === 1 ? '' : 's'} of ${result.receipts} receipt${result.receipts === 1 ? '' : 's'} (P-256 key ${result.keyid.slice(0, 16)}…, ${result.key_path})\n` +
      (skippedNote ? `${skippedNote}\n` : '') +
      `verify it with: atlas verify ${opts.out} --attestation-key attestation.pem (from \`atlas key export --format pem --for attestations\`)`,
  );
  return EXIT.ok;
}

export default async function receiptsExport(ctx: CliContext, opts: ExportOptions): Promise<number> {
  const ids = opts.task ?? [];
  const refs =
    ids.length > 0 ? ids.map((id) => findTaskRef(id, ctx.home)) : [requireTask({ cwd: ctx.cwd, home: ctx.home, includeEnded: true }).ref];
  if (opts.format === 'in-toto') return exportInToto(ctx, refs, opts);
  const config = await ctx.config();
  const version = typeof ATLAS_VERSION === 'string' ? ATLAS_VERSION : undefined;
  const bundle = await exportBundle(refs, ctx.home, config.hooks.key_derivation, new Date(), version);
  const receipts = bundle.tasks.reduce((n, t) => n + t.receipts.length, 0);
  if (!opts.out) {
    process.stdout.write(toJson(bundle));
    return EXIT.ok;
  }
  const out = write(ctx, opts.out, toJson(bundle));
  const summary = { out, tasks: bundle.tasks.map((t) => t.task_id), receipts, xpub_fingerprint: bundle.xpub_fingerprint };
  ctx.out.result(
    summary,
    () =>
      `wrote ${opts.out}: ${receipts} receipt${receipts === 1 ? '' : 's'} of ${summary.tasks.join(', ')} (key ${bundle.xpub_fingerprint})\n` +
      `verify it with: atlas verify ${opts.out} --xpub "$(atlas key export)"`,
  );
  return EXIT.ok;
}
