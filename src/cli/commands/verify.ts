// atlas verify [PATH...]: check receipts, or their in-toto attestations, with public keys alone
// (docs/keys-and-verification.md).
// Exit 0 all good, 1 a receipt invalid or a policy unmet, 2 unreadable or malformed input, 3 key problem.
import { dirname, resolve } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { signsCommit } from '../../domain/receipt.js';
import type { VerifyPolicies } from '../../domain/receipt-policy.js';
import { equivalentCommits } from '../../receipts/commit-equivalence.js';
import { resolveCommit } from '../../receipts/commit-ref.js';
import type { ReceiptSet } from '../../receipts/inputs.js';
import { loadReceiptSets } from '../../receipts/inputs.js';
import { repoPolicy } from '../../receipts/repo-policy.js';
import { renderVerifyText, verifyJson } from '../../receipts/report-text.js';
import { resolveAttestationKey, resolveXpubText } from '../../receipts/trusted-key.js';
import { SHARED_FILE_MODE, writeFileAtomic } from '../../store/atomic-write.js';
import { mkdirForPerson } from '../../store/private-umask.js';
import type { CliContext } from '../context.js';

interface VerifyOptions {
  xpub?: string;
  xpubFile?: string;
  attestationKey?: string;
  requireStep?: string[];
  commit?: string;
  requirePass?: boolean;
  junit?: string;
  artifacts?: string;
  requireCommand?: string[];
  /** false with --no-repo-policy. */
  repoPolicy?: boolean;
  allowEmpty?: boolean;
  requireSandbox?: boolean;
  requirePristine?: boolean;
  requireControlReview?: boolean;
}

/** The commit whose .atlas/config.yaml sets the repository's policy: --commit's, else HEAD here. */
async function policyCommit(commit: string | undefined, cwd: string): Promise<string | undefined> {
  if (commit !== undefined) return commit;
  try {
    return await resolveCommit('HEAD', cwd);
  } catch {
    return undefined; // not in a repository (or no commit yet): no repository policy
  }
}

export default async function verify(ctx: CliContext, paths: string[], opts: VerifyOptions): Promise<number> {
  // The key first: without a trustworthy key nothing else can be said (exit 3). Inputs of
  // attestations alone need no account xpub, so a missing one is held until the inputs are read.
  let xpub: ReturnType<typeof resolveXpubText> | undefined;
  let noXpub: unknown;
  try {
    xpub = resolveXpubText(opts, ctx.home);
  } catch (error) {
    noXpub = error;
  }
  const [{ parseAccountXpub }, { verifyReceiptSets }, { renderJunit }] = await Promise.all([
    import('../../crypto/hd.js'),
    import('../../receipts/verify.js'),
    import('../../receipts/junit.js'),
  ]);
  const node = xpub ? parseAccountXpub(xpub.text, xpub.source) : undefined;
  const config = await ctx.config();
  const commit = opts.commit !== undefined ? await resolveCommit(opts.commit, ctx.cwd) : undefined;
  let sets: ReceiptSet[];
  try {
    sets = loadReceiptSets(paths, {
      cwd: ctx.cwd,
      home: ctx.home,
      derivation: config.hooks.key_derivation,
      ...(opts.artifacts ? { artifactsDir: resolve(ctx.cwd, opts.artifacts) } : {}),
    });
  } catch (error) {
    throw noXpub ?? error;
  }
  if (!node && (sets.length === 0 || sets.some((s) => s.kind !== 'attestation'))) throw noXpub;
  const attestationKey = sets.some((s) => s.kind === 'attestation')
    ? await resolveAttestationKey(opts, ctx.home, config.hooks.key_derivation)
    : undefined;
  const requireCommands = (opts.requireCommand ?? []).map((command) => {
    if (command.trim().length === 0)
      throw new AtlasError('--require-command needs a command, got an empty one', {
        exitCode: EXIT.input,
        hint: 'for example: --require-command "npm test"',
      });
    return { command, source: '--require-command' };
  });
  let requireControlReview = Boolean(opts.requireControlReview);
  if (opts.repoPolicy !== false) {
    const at = await policyCommit(commit, ctx.cwd);
    if (at !== undefined) {
      const repo = await repoPolicy(ctx.cwd, at);
      requireCommands.push(...repo.commands);
      requireControlReview ||= repo.requireControlReview;
    }
  }
  const policies: VerifyPolicies = {
    requireSteps: opts.requireStep ?? [],
    requirePass: Boolean(opts.requirePass),
    requireCommands,
    allowEmpty: Boolean(opts.allowEmpty),
    requireSandbox: Boolean(opts.requireSandbox),
    requirePristine: Boolean(opts.requirePristine),
    requireControlReview,
  };
  if (commit !== undefined) {
    policies.commit = commit;
    const bundles = sets.flatMap((s) => (s.file ? [s.file] : []));
    const candidates = [
      ...new Set(
        sets.flatMap((s) =>
          s.receipts.filter((r) => signsCommit(r) && r.git_dirty === false && typeof r.git_commit === 'string').map((r) => r.git_commit!),
        ),
      ),
    ];
    if (bundles.length > 0 && candidates.some((c) => c !== commit)) {
      const found = await equivalentCommits(commit, candidates, [...new Set(bundles)], ctx.cwd);
      policies.equivalentCommits = found.equivalent;
      policies.unknownCommits = found.unknown;
    }
  }
  const report = await verifyReceiptSets(
    sets,
    { ...(node && xpub ? { account: { node, source: xpub.source } } : {}), ...(attestationKey ? { attestation: attestationKey } : {}) },
    policies,
  );
  if (opts.junit) {
    const junit = resolve(ctx.cwd, opts.junit);
    mkdirForPerson(dirname(junit));
    writeFileAtomic(junit, renderJunit(report), { mode: SHARED_FILE_MODE });
  }
  ctx.out.result(verifyJson(report), () => renderVerifyText(report));
  return report.ok ? EXIT.ok : EXIT.failure;
}
