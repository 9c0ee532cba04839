// `atlas sync prune` and sync.keep_versions as people run them (the built CLI, real processes):
// text and --json output, --dry-run, the refusals and their exit codes, a push that prunes.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, sandbox, writeFiles } from './helpers/engine-fixtures.js';

let sb: Sandbox;
beforeAll(() => ensureBuilt());
afterEach(() => sb?.cleanup());

const versions = (store: string) => readdirSync(join(store, 'cli-ws')).filter((n) => /^\d+$/.test(n));

describe('atlas sync prune (CLI)', () => {
  it('prunes with --keep, shows a dry run, and prints JSON', async () => {
    sb = sandbox();
    const src = join(sb.base, 'src');
    const store = join(sb.home, 'store');
    const target = ['--dir', src, '--workspace', 'cli-ws'];
    for (let i = 0; i < 3; i++) {
      writeFiles(src, { 'a.txt': `version ${i}` });
      expect((await atlas(sb, ['sync', 'push', ...target])).code).toBe(0);
    }
    const names = versions(store).sort();
    const dry = await atlas(sb, ['sync', 'prune', ...target, '--keep', '1', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      new RegExp(
        `^dry run: would remove 2 version\\(s\\), 2 file\\(s\\), .* \\(${store}; keeping the newest 1\\)\\n  cli-ws: kept ${names[2]}\\n    would remove ${names[0]}  1 file\\(s\\)`,
      ),
    );
    expect(versions(store)).toHaveLength(3);
    const done = await atlas(sb, ['sync', 'prune', ...target, '--keep', '2', '--json']);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({
      location: store,
      workspace: 'cli-ws',
      keep: 2,
      dry_run: false,
      removed: { versions: 1, objects: 1, blobs: 0 },
      trees: [{ tree: 'cli-ws', kept: [names[1], names[2]] }],
    });
    expect(versions(store).sort()).toEqual([names[1], names[2]]);
    // sync.keep_versions stands in for --keep.
    const byConfig = await atlas(sb, ['-c', 'sync.keep_versions=1', 'sync', 'prune', ...target]);
    expect(byConfig.stdout).toMatch(/^removed 1 version\(s\)/);
    expect(versions(store)).toEqual([names[2]]);
  });

  it('refuses without N, with N < 1 or a bad --keep (exit 2); names a bad sync.keep_versions', async () => {
    sb = sandbox();
    const src = join(sb.base, 'src');
    writeFiles(src, { 'a.txt': 'a' });
    const target = ['--dir', src, '--workspace', 'cli-ws'];
    const none = await atlas(sb, ['sync', 'prune', ...target]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/nothing says how many versions to keep .*\n.*hint: pass --keep N/);
    const zero = await atlas(sb, ['sync', 'prune', ...target, '--keep', '0']);
    expect([zero.code, zero.stderr]).toEqual([2, expect.stringMatching(/--keep 0: at least the newest version is always kept/)]);
    const word = await atlas(sb, ['sync', 'prune', ...target, '--keep', 'all']);
    expect([word.code, word.stderr]).toEqual([2, expect.stringMatching(/--keep all: expected a whole number/)]);
    // An invalid sync.keep_versions is named, like every configuration key, and falls back to 0
    // (keep all): a push still works and removes nothing, a prune without --keep is refused.
    for (const bad of ['-1', 'three']) {
      const push = await atlas(sb, ['-c', `sync.keep_versions=${bad}`, 'sync', 'push', ...target]);
      expect([push.code, push.stderr]).toEqual([
        0,
        expect.stringMatching(/invalid sync\.keep_versions: expected (0\.\.1000000|a whole number).*; using 0 \(the default\)/),
      ]);
      const prune = await atlas(sb, ['-c', `sync.keep_versions=${bad}`, 'sync', 'prune', ...target]);
      expect(prune.code).toBe(2);
    }
  });

  it('a push with sync.keep_versions prunes after it and says so', async () => {
    sb = sandbox();
    const src = join(sb.base, 'src');
    const target = ['--dir', src, '--workspace', 'cli-ws'];
    writeFiles(src, { 'a.txt': 'one' });
    await atlas(sb, ['sync', 'push', ...target]);
    writeFiles(src, { 'a.txt': 'two' });
    const push = await atlas(sb, ['-c', 'sync.keep_versions=1', 'sync', 'push', ...target]);
    expect(push.code).toBe(0);
    expect(push.stdout).toMatch(/pushed version \d+[\s\S]*\nsync\.keep_versions: removed 1 version\(s\), 1 file\(s\)/);
    expect(versions(join(sb.home, 'store'))).toHaveLength(1);
  });
});
