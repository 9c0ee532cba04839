// The one place where commands that run tasks (start, resume, and recover) get what other layers
// add to a run: proof of validation (signed receipts) and receipt status in HOOK.md.
import type { Config } from '../config/schema.js';
import type { RunTaskOptions } from '../engine/contract.js';
import type { CliContext } from './context.js';

/** --sandbox / --local on start, resume and recover, as an execution.mode override. */
export function executionModeFlag(opts: { sandbox?: boolean; local?: boolean }): 'sandbox' | 'local' | undefined {
  return opts.sandbox ? 'sandbox' : opts.local ? 'local' : undefined;
}

export type RunSeams = Pick<RunTaskOptions, 'validationRecorder' | 'receiptStatuses' | 'lifecycle'>;

/**
 * Every validation command yields a signed receipt; HOOK.md shows each receipt verified. The
 * signing key is created here if it is missing (first run, or a home restored without keys), so
 * start, resume and recover never reach a validation step unable to sign.
 */
export async function runSeams(ctx: CliContext, config: Config): Promise<RunSeams> {
  await ctx.ensureSigningKey(config, (line) => process.stderr.write(`atlas: ${line}\n`));
  const { createSigningRecorder } = await import('../receipts/signing-recorder.js');
  return {
    validationRecorder: createSigningRecorder(ctx.home, config),
    receiptStatuses: await ctx.receiptStatuses(config),
    lifecycle: { verbose: Boolean(ctx.flags.verbose) },
  };
}
