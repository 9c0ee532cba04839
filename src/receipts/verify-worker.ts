// Worker thread entry of the built CLI (dist/verify-worker.js): checks its share of a large
// `atlas verify` input and posts the outcomes back (see check-sets.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { HDKey } from '../crypto/hd.js';
import type { CheckJob } from './check-sets.js';
import { checkJobsHere } from './check-sets.js';

const { xpub, jobs } = workerData as { xpub: string; jobs: CheckJob[] };
try {
  parentPort!.postMessage({ outcomes: checkJobsHere(jobs, HDKey.fromExtendedKey(xpub)) });
} catch (error) {
  parentPort!.postMessage({ error: error instanceof Error ? error.message : String(error) });
}
