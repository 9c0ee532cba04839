import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { isPidRunning } from '../src/liveness/process-identity.js';
import { waitFor } from './helpers/engine-fixtures.js';

describe('process liveness', () => {
  let parent: ReturnType<typeof spawn> | undefined;
  afterEach(() => parent?.kill('SIGKILL'));

  it('a killed process its parent has not reaped (a zombie) is not running', async () => {
    // sh starts a child in the background, prints its pid, then becomes `sleep`, which never
    // reaps: once killed, the child stays a zombie, as a killed atlas under such a parent would.
    parent = spawn('sh', ['-c', 'sleep 60 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const pid = await new Promise<number>((resolve) => parent!.stdout!.once('data', (d) => resolve(Number(String(d).trim()))));
    expect(isPidRunning(pid)).toBe(true);
    // Killed while its parent is still sh (before the exec), the child would be reaped by sh.
    await waitFor(() => readFileSync(`/proc/${parent!.pid}/comm`, 'utf8').trim() === 'sleep', 30_000, 'sh to become sleep');
    process.kill(pid, 'SIGKILL');
    await waitFor(() => /^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')), 30_000, 'the child to be a zombie');
    expect(() => process.kill(pid, 0)).not.toThrow(); // the zombie still answers signal 0
    expect(isPidRunning(pid)).toBe(false);
  });

  it('this process is running; a pid that does not exist is not', () => {
    expect(isPidRunning(process.pid)).toBe(true);
    expect(isPidRunning(2 ** 22 + 12345)).toBe(false);
  });
});
