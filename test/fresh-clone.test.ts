// A clone has nothing beside it: no test, bench, script or source may reach outside the checkout
// (the requirement documents live in a folder next to the development checkout only).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, seedExampleHook } from './helpers/core-fixtures.js';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.(ts|mjs|js|json|sh)$/.test(name) ? [path] : [];
  });
}

describe('a fresh clone', () => {
  it('reads nothing from the requirements folder beside the checkout (tests, benches, scripts, sources)', () => {
    const offenders: string[] = [];
    for (const dir of ['src', 'test', 'bench', 'scripts', 'bin']) {
      for (const file of files(join(REPO_ROOT, dir))) {
        if (file === import.meta.filename) continue; // this test spells the patterns out
        const text = readFileSync(file, 'utf8');
        // A path built to the folder beside the checkout, in any spelling (a relative path, or joined parts).
        if (/\.\.\/shared\b|['"]\.\.['"]\s*,\s*['"]shared['"]|\/work\/shared/.test(text)) offenders.push(relative(REPO_ROOT, file));
      }
    }
    expect(offenders).toEqual([]);
  });

  it("has seed 003's JSON example as test data", () => {
    const hook = seedExampleHook();
    expect(hook.task_id).toBe('task-20260117-143022');
    expect(hook.receipts.length).toBeGreaterThan(0);
  });
});
