// A push of a folder holding files or folders its user may not read (issue 20: nothing lost at the
// edges): refused before anything is stored, naming them (exit 2), where it used to stop with an
// "unexpected error"; `atlas sync status` lists them. Root reads everything, so when the tests run
// as root the CLI runs as `nobody`, from a copy of the build that `nobody` may read.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from './helpers/engine-fixtures.js';
import { removeScratch, scratch } from './helpers/sync-fixtures.js';
import { cliCopyForNobody } from './helpers/sync-nobody.js';

const asRoot = process.getuid?.() === 0;
const nobody = asRoot
  ? {
      uid: Number(spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout.trim()),
      gid: Number(spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).stdout.trim()),
    }
  : undefined;
/** As root, `nobody` must be able to run this Node.js (a Node.js inside root's home is not). */
const cannotDrop =
  nobody && spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '-e', '0']).status !== 0
    ? `runuser -u nobody cannot run ${process.execPath}`
    : undefined;
let cli = join(ROOT, 'bin', 'atlas.cjs');

beforeAll(() => {
  ensureBuilt();
  if (!nobody || cannotDrop) return;
  cli = cliCopyForNobody();
});
afterAll(() => removeScratch());

/** Everything under `path` owned by the user the CLI runs as. */
function own(path: string): void {
  if (!nobody) return;
  chownSync(path, nobody.uid, nobody.gid);
  for (const name of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, name.name);
    if (name.isDirectory()) own(child);
    else chownSync(child, nobody.uid, nobody.gid);
  }
}

function sync(args: string[], env: Record<string, string>) {
  const argv = [process.execPath, cli, 'sync', ...args];
  const [cmd, rest] = nobody ? ['runuser', ['-u', 'nobody', '--', ...argv]] : [argv[0]!, argv.slice(1)];
  const r = spawnSync(cmd, rest, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('a folder with files its user may not read', () => {
  it.skipIf(cannotDrop !== undefined)(
    `is refused by a push, naming them, and nothing is stored; status lists them; once readable it pushes${cannotDrop ? ` (skipped: ${cannotDrop})` : ''}`,
    () => {
      const base = scratch('atlas-unreadable-');
      chmodSync(base, 0o755);
      const folder = join(base, 'w');
      mkdirSync(join(folder, 'closed'), { recursive: true });
      writeFileSync(join(folder, 'a.txt'), 'a');
      writeFileSync(join(folder, 'secret.txt'), 's');
      writeFileSync(join(folder, 'closed', 'inside.txt'), 'x');
      own(base);
      chmodSync(join(folder, 'secret.txt'), 0o000);
      chmodSync(join(folder, 'closed'), 0o000);
      const env = { ATLAS_HOME: join(base, 'home'), ATLAS_SYNC_STORE: join(base, 'store') };

      const pushed = sync(['push', '--dir', folder, '--workspace', 'w'], env);
      expect(pushed.code, pushed.out).toBe(2);
      expect(pushed.out).toContain('2 file(s) or folder(s) cannot be read (permission denied), so nothing was pushed');
      expect(pushed.out).toMatch(/"closed"\n\s+"secret.txt"/);
      expect(pushed.out).toContain('chmod u+r');
      expect(pushed.out).not.toContain('unexpected error');
      expect(existsSync(join(base, 'store', 'w')) ? readdirSync(join(base, 'store', 'w')).filter((n) => /^\d+$/.test(n)) : []).toEqual([]);

      const status = sync(['status', '--dir', folder, '--workspace', 'w', '--json'], env);
      expect(status.code, status.out).toBe(0);
      expect(JSON.parse(status.out).push.unreadable).toEqual(['closed', 'secret.txt']);

      chmodSync(join(folder, 'secret.txt'), 0o600);
      chmodSync(join(folder, 'closed'), 0o700);
      const again = sync(['push', '--dir', folder, '--workspace', 'w', '--json'], env);
      expect(again.code, again.out).toBe(0);
      expect(JSON.parse(again.out).stats.files_uploaded).toBe(3);
    },
  );
});
