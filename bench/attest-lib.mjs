// For bench/verify.mjs: an ATLAS_HOME holding a bundle's tasks as task.json + hook.json (the
// on-disk format is the contract) under the master key that signed them, so `atlas receipts export
// --format in-toto` can be timed on it; and timing of one CLI run.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ATLAS, writeFixtureTask } from './lib.mjs';

export function homeFromBundle(home, repo, seed, bundle) {
  mkdirSync(join(home, 'keys'), { recursive: true, mode: 0o700 });
  chmodSync(join(home, 'keys'), 0o700);
  const masterKey = join(home, 'keys', 'master.key');
  writeFileSync(
    masterKey,
    JSON.stringify({ format: 'atlas-master-key', version: 1, created_at: '2026-01-17T00:00:00Z', seed: Buffer.from(seed).toString('hex') }),
    { mode: 0o600 },
  );
  for (const t of bundle.tasks) {
    const { dir } = writeFixtureTask(home, repo, { id: t.task_id, workspace: t.workspace_id });
    for (const name of ['task.json', 'hook.json']) {
      const path = join(dir, name);
      const doc = JSON.parse(readFileSync(path, 'utf8'));
      doc.task_index = t.task_index;
      if (name === 'hook.json') doc.receipts = t.receipts;
      writeFileSync(path, JSON.stringify(doc));
    }
  }
  return bundle.tasks.map((t) => t.task_id);
}

/** Seconds of one `atlas ARGS` run (process start included) and its stdout. */
export function timeCli(args, home) {
  const started = process.hrtime.bigint();
  let stdout;
  try {
    stdout = execFileSync(process.execPath, [ATLAS, ...args], {
      cwd: home,
      env: { ...process.env, ATLAS_HOME: home },
      encoding: 'utf8',
      maxBuffer: 512 * 1024 * 1024,
    });
  } catch (error) {
    throw new Error(`atlas ${args[0]} failed (exit ${error.status}): ${String(error.stderr).slice(0, 2000)}`);
  }
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, stdout };
}
