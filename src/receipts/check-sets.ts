// Checks the receipts of many tasks: in this thread, or for large inputs split by task across
// worker threads (verification is CPU-bound and independent per receipt). Results are the same
// either way; workers are used only from the built CLI, where their entry file exists.
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { AccountVerifier, prepareGenerator } from '../crypto/account-verifier.js';
import type { HDKey } from '../crypto/hd.js';
import type { KeyDerivation, ValidationReceipt } from '../domain/receipt.js';
import { accountPath } from '../domain/receipt.js';
import type { ReceiptResult } from './check.js';
import { ArtifactHasher, checkReceipt } from './check.js';

export interface CheckJob {
  taskId: string;
  taskIndex: number;
  derivation: KeyDerivation;
  receipts: ValidationReceipt[];
  artifactsBase: string | undefined;
}

/** What a worker sends back per receipt (the receipt itself stays here). */
export type CheckOutcome = Omit<ReceiptResult, 'receipt'>;

/** Below this many receipts, starting workers costs more than it saves. */
const PARALLEL_FROM = 2000;
const RECEIPTS_PER_WORKER = 1000;
const MAX_WORKERS = 8;

export function checkJobsHere(jobs: CheckJob[], account: HDKey): CheckOutcome[][] {
  const verifiers = new Map<string, AccountVerifier>();
  const hasher = new ArtifactHasher();
  prepareGenerator(jobs.reduce((n, j) => n + j.receipts.length, 0));
  return jobs.map((job) => {
    const id = accountPath(job.derivation);
    let verifier = verifiers.get(id);
    if (!verifier) {
      verifier = new AccountVerifier(account, job.derivation);
      verifiers.set(id, verifier);
    }
    verifier.expectReceipts(job.taskIndex, job.receipts.length);
    const ref = { taskId: job.taskId, taskIndex: job.taskIndex, artifactsBase: job.artifactsBase };
    return job.receipts.map((receipt, index) => {
      const { receipt: _r, ...outcome } = checkReceipt(verifier, ref, receipt, index, hasher);
      return outcome;
    });
  });
}

/** The worker entry of the built CLI (dist/verify-worker.js), if this code runs from dist/. */
function workerEntry(): URL | undefined {
  for (const rel of ['../verify-worker.js', './verify-worker.js']) {
    const url = new URL(rel, import.meta.url);
    if (url.protocol === 'file:' && existsSync(fileURLToPath(url))) return url;
  }
  return undefined;
}

/** Splits jobs into `n` groups of similar receipt counts (largest first, into the lightest group). */
function balance(jobs: CheckJob[], n: number): number[][] {
  const groups = Array.from({ length: n }, () => ({ load: 0, jobs: [] as number[] }));
  const order = jobs.map((_, i) => i).sort((a, b) => jobs[b]!.receipts.length - jobs[a]!.receipts.length);
  for (const i of order) {
    const lightest = groups.reduce((min, g) => (g.load < min.load ? g : min));
    lightest.jobs.push(i);
    lightest.load += jobs[i]!.receipts.length + 1;
  }
  return groups.filter((g) => g.jobs.length > 0).map((g) => g.jobs);
}

function runWorker(entry: URL, xpub: string, jobs: CheckJob[]): Promise<CheckOutcome[][]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(entry, { workerData: { xpub, jobs } });
    worker.once('message', (message: { outcomes?: CheckOutcome[][]; error?: string }) => {
      if (message.outcomes) resolve(message.outcomes);
      else reject(new Error(message.error ?? 'verify worker failed'));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`verify worker exited with code ${code}`));
    });
  });
}

/**
 * How many worker threads to use: $ATLAS_VERIFY_WORKERS when set (0 or 1: none), else one per
 * ~1,000 receipts up to the number of cores, and none below 2,000 receipts.
 */
export function workerCount(total: number, tasks: number, env: NodeJS.ProcessEnv = process.env): number {
  const forced = env['ATLAS_VERIFY_WORKERS'];
  if (forced !== undefined && /^\d+$/.test(forced.trim())) return Math.min(Number(forced), MAX_WORKERS, tasks);
  if (total < PARALLEL_FROM) return 1;
  return Math.min(availableParallelism(), MAX_WORKERS, Math.ceil(total / RECEIPTS_PER_WORKER), tasks);
}

export async function checkJobs(jobs: CheckJob[], account: HDKey): Promise<CheckOutcome[][]> {
  const total = jobs.reduce((n, j) => n + j.receipts.length, 0);
  const workers = workerCount(total, jobs.length);
  const entry = workers > 1 ? workerEntry() : undefined;
  if (!entry) return checkJobsHere(jobs, account);
  const groups = balance(jobs, workers);
  let parts: CheckOutcome[][][];
  try {
    parts = await Promise.all(
      groups.map((group) =>
        runWorker(
          entry,
          account.publicExtendedKey,
          group.map((i) => jobs[i]!),
        ),
      ),
    );
  } catch {
    // Threads unavailable (resource limits, a broken install): same checks, one core.
    return checkJobsHere(jobs, account);
  }
  const outcomes: CheckOutcome[][] = new Array(jobs.length);
  groups.forEach((group, g) => {
    group.forEach((jobIndex, k) => {
      outcomes[jobIndex] = parts[g]![k]!;
    });
  });
  return outcomes;
}
