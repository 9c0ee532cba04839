// Fixtures shared by the pack tests (test/sync-pack-rules.test.ts, test/sync-pack-stores.test.ts):
// the hashes a manifest entry carries, and two made-up pack names.
import { createHash } from 'node:crypto';

export const sha = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');
export const md5 = (text: string | Buffer) => createHash('md5').update(text).digest('hex');
export const P = 'a'.repeat(64);
export const Q = 'b'.repeat(64);
