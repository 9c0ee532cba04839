// ATLAS_HOME is private (issue 8): everything atlas creates there is 0700/0600 whatever the
// umask, and `atlas init` tightens a home that is not, saying so.
import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, sandbox } from './helpers/engine-fixtures.js';

let sb: Sandbox;
beforeAll(() => ensureBuilt());
afterEach(() => sb?.cleanup());

/** Every path under `dir` whose mode lets group or others in (symbolic links aside). */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return;
    if ((st.mode & 0o077) !== 0) found.push(`${path} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return found;
}

function openUp(dir: string): void {
  const st = lstatSync(dir);
  chmodSync(dir, st.isDirectory() ? 0o755 : 0o644);
  if (st.isDirectory()) for (const name of readdirSync(dir)) openUp(join(dir, name));
}

describe('a private ATLAS_HOME', () => {
  it('a task run with umask 022 leaves nothing under ATLAS_HOME readable by others', async () => {
    sb = sandbox({
      'package.json': JSON.stringify({ name: 'fixture', scripts: { test: 'node -e "console.log(\'secret-ish output\')"' } }),
    });
    const previous = process.umask(0o022);
    try {
      const result = await atlas(sb, ['start', 'check']);
      expect(result.code).toBe(0);
      const status = await atlas(sb, ['status']);
      expect(status.code).toBe(0);
    } finally {
      process.umask(previous);
    }
    expect(openToOthers(sb.home)).toEqual([]);
  });

  it('atlas init tightens a home made readable by others, says so, and is quiet the second time', async () => {
    sb = sandbox({ 'package.json': JSON.stringify({ name: 'fixture', scripts: { test: 'node -e "0"' } }) });
    expect((await atlas(sb, ['start', 'check'])).code).toBe(0);
    openUp(sb.home);
    expect(openToOthers(sb.home).length).toBeGreaterThan(5);
    const init = await atlas(sb, ['init', '--no-hooks']);
    expect(init.code).toBe(0);
    expect(init.stdout).toMatch(new RegExp(`made ${sb.home} private: removed group and other access from \\d+ paths`));
    expect(openToOthers(sb.home)).toEqual([]);
    const again = await atlas(sb, ['init', '--no-hooks']);
    expect(again.stdout).not.toContain('private');
  });
});
