// Starts s3rver (test/fixtures/s3rver-child.mjs) in a child process for a test file; stop() in afterAll.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export interface S3Server {
  endpoint: string;
  bucket: string;
  /** Config overrides that point atlas at it. */
  config: { store: string; endpoint: string };
  env: Record<string, string>;
  stop(): Promise<void>;
}

const CHILD = resolve(import.meta.dirname, '../fixtures/s3rver-child.mjs');

/** s3rver's fixed account. */
export const S3RVER_ENV = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };

export async function startS3rver(bucket = 'atlas-test'): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), 'atlas-s3rver-'));
  const child = spawn(process.execPath, [CHILD, dir, bucket], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, NODE_OPTIONS: '--openssl-legacy-provider' },
  });
  const port = await new Promise<number>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error('s3rver did not start within 15 s')), 15_000);
    child.once('exit', (code) => fail(new Error(`s3rver exited ${code}`)));
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      ok((JSON.parse(line) as { port: number }).port);
    });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    config: { store: `s3://${bucket}/stores`, endpoint },
    env: S3RVER_ENV,
    stop: async () => {
      const exited = new Promise((ok) => child.once('exit', ok));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
