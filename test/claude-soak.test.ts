// The short crash soak with the real Claude Code (issue 22): three tasks, each SIGKILLed once (atlas
// or the Claude Code it launched) and recovered; every task completes, no agent is left running,
// and the ledger equals what the fake Messages API delivered. `npm run soak:claude` runs 50.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from './helpers/engine-fixtures.js';

beforeAll(() => ensureBuilt());

describe('crash soak with the real Claude Code', () => {
  it("3 kills: all tasks complete, no orphan, the ledger equals the API's figures", async () => {
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [join(ROOT, 'bench', 'soak-claude.mjs'), '--kills', '3', '--seed', '20261125'], { cwd: ROOT });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      child.on('close', (code) => resolve({ code, out }));
    });
    expect(result.out).toMatch(/tasks completed\s+(\d)\/\1 .*target: all\s+ok/);
    expect(result.out).toMatch(/orphaned agents\s+0/);
    expect(result.out).toMatch(/ledger vs API .* target: 0 difference\s+ok/);
    expect(result.code, result.out).toBe(0);
  }, 180_000);
});
