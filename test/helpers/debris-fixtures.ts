// Fixtures for cleanup's debris sweep: what SIGKILLed atlas processes really leave. Temp files come
// from a child process that runs writeFileAtomic and SIGKILLs itself before the rename; half-created
// task folders are claimed with the store API exactly as `atlas start` claims them; everything can
// be back-dated with utimes.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ownerRecordForThisProcess, writeOwner } from '../../src/liveness/owner.js';
import { taskFiles } from '../../src/store/paths.js';
import type { TaskRef } from '../../src/store/task-store.js';
import { claimTaskDir } from '../../src/store/task-store.js';
import { compileFixture } from './compile-fixture.js';

let writer: Promise<string> | undefined;

/**
 * Writes `path` atomically in a child process killed between writing its temp file and the rename:
 * returns the temp file it left (its name carries the dead child's pid).
 */
export async function interruptedWrite(path: string, content = '{"interrupted": true}\n'): Promise<string> {
  writer ??= compileFixture('test/fixtures/crash-writer.ts');
  const dir = dirname(path);
  const before = new Set(readdirSync(dir));
  const result = spawnSync(process.execPath, [await writer, path, content]);
  if (result.signal !== 'SIGKILL') throw new Error(`the writer was not killed: ${result.stderr}`);
  const left = readdirSync(dir).filter((name) => !before.has(name));
  if (left.length !== 1) throw new Error(`expected one temp file in ${dir}, found ${left.join(', ')}`);
  return join(dir, left[0]!);
}

/** A pid no process has any more: that of a child that already exited. */
export function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

/**
 * What `atlas start` leaves when killed after claiming the task (claimTaskDir, then owner.json) and
 * before task.json: the owner record names `ownerPid` (this process's own identity when it is
 * this process, so it is alive).
 */
export function halfCreatedTask(home: string, workspace: string, ownerPid: number): TaskRef {
  const ref = claimTaskDir(workspace, new Date(), home);
  const owner = ownerRecordForThisProcess({ heartbeatIntervalMs: 10_000, staleThresholdMs: 300_000 });
  writeOwner(taskFiles(ref.dir).owner, ownerPid === process.pid ? owner : { ...owner, pid: ownerPid });
  return ref;
}

/** Sets the times of `path` and everything under it to `ms` ago. */
export function backdate(path: string, ms: number): void {
  const when = new Date(Date.now() - ms);
  const walk = (p: string) => {
    if (statSync(p).isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
    utimesSync(p, when, when);
  };
  walk(path);
}

/** An atlas temp name for `target` written by `pid` (for names no real writer can leave, e.g. a live pid). */
export function tempNameFor(target: string, pid: number): string {
  return `.${target}.${pid}.${Date.now().toString(36)}7.tmp`;
}
