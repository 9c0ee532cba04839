import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { ReceiptBundle } from '../../src/receipts/bundle.js';
import { atlas, tempDir } from './receipt-fixtures.js';

export async function exported(home: string, ...taskIds: string[]): Promise<{ path: string; bundle: ReceiptBundle }> {
  const path = join(tempDir('atlas-bundle-'), 'receipts.json');
  const result = await atlas(['receipts', 'export', ...taskIds.flatMap((id) => ['--task', id]), '--out', path], { home });
  expect(result.code, result.stderr).toBe(0);
  return { path, bundle: JSON.parse(readFileSync(path, 'utf8')) as ReceiptBundle };
}

export function rewrite(path: string, change: (bundle: ReceiptBundle) => void): string {
  const bundle = JSON.parse(readFileSync(path, 'utf8')) as ReceiptBundle;
  change(bundle);
  const out = join(tempDir('atlas-bundle-'), 'tampered.json');
  writeFileSync(out, JSON.stringify(bundle, null, 2));
  return out;
}
