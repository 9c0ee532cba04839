// atlas verify [PATH...]: check receipts with a public key alone (docs/keys-and-verification.md).
// Exit 0 all good, 1 a receipt invalid or a policy unmet, 2 unreadable or malformed input, 3 key problem.
import { resolve } from 'node:path';
import { EXIT } from '../../domain/errors.js';
import { resolveCommit } from '../../receipts/commit-ref.js';
import { loadReceiptSets } from '../../receipts/inputs.js';
import { renderVerifyText, verifyJson } from '../../receipts/report-text.js';
import { resolveXpubText } from '../../receipts/trusted-key.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import type { CliContext } from '../context.js';

interface VerifyOptions {
  xpub?: string;
  xpubFile?: string;
  requireStep: string[];
  commit?: string;
  requirePass?: boolean;
  junit?: string;
  artifacts?: string;
}

export default async function verify(ctx: CliContext, paths: string[], opts: VerifyOptions): Promise<number> {
  // The key first: without a trustworthy key nothing else can be said (exit 3).
  const xpub = resolveXpubText(opts, ctx.home);
  const [{ parseAccountXpub }, { verifyReceiptSets }, { renderJunit }] = await Promise.all([
    import('../../crypto/hd.js'),
    import('../../receipts/verify.js'),
    import('../../receipts/junit.js'),
  ]);
  const node = parseAccountXpub(xpub.text, xpub.source);
  const config = await ctx.config();
  const commit = opts.commit !== undefined ? await resolveCommit(opts.commit, ctx.cwd) : undefined;
  const sets = loadReceiptSets(paths, {
    cwd: ctx.cwd,
    home: ctx.home,
    derivation: config.hooks.key_derivation,
    ...(opts.artifacts ? { artifactsDir: resolve(ctx.cwd, opts.artifacts) } : {}),
  });
  const report = await verifyReceiptSets(sets, { node, source: xpub.source }, {
    requireSteps: opts.requireStep,
    requirePass: Boolean(opts.requirePass),
    ...(commit !== undefined ? { commit } : {}),
  });
  if (opts.junit) writeFileAtomic(resolve(ctx.cwd, opts.junit), renderJunit(report));
  ctx.out.result(verifyJson(report), () => renderVerifyText(report));
  return report.ok ? EXIT.ok : EXIT.failure;
}
