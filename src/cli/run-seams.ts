// The one place where commands that run tasks (start, resume, and recover) get what other layers
// add to a run: proof of validation (signed receipts) and receipt status in HOOK.md.
import type { Config } from '../config/schema.js';
import type { RunTaskOptions } from '../engine/contract.js';
import type { CliContext } from './context.js';

export type RunSeams = Pick<RunTaskOptions, 'validationRecorder' | 'receiptStatuses'>;

/**
 * Without a recorder, validation keeps its exact output under artifacts/ and no receipt is made.
 * The crypto layer plugs its ValidationRecorder in here.
 */
export async function runSeams(ctx: CliContext, _config: Config): Promise<RunSeams> {
  return ctx.receiptStatuses ? { receiptStatuses: ctx.receiptStatuses } : {};
}
