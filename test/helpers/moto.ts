// moto's AWS server (`python3 -m moto.server`) on 127.0.0.1 for a test file: a second S3
// implementation beside s3rver (so that neither's quirks are the only truth) and the DynamoDB the
// server's message store is tested against. Started on a free port, ready when it answers, stopped
// by stop() in afterAll. motoMissing() says why the moto tests are skipped on a machine without it.

import type { ChildProcess } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from './free-port.js';
import type { S3Server } from './s3rver.js';
import { S3RVER_ENV, serverOf } from './s3rver.js';

/** The answer of motoMissing() found by test/global-build.ts for every worker ('' when moto runs). */
export const MOTO_PROBE_ENV = 'ATLAS_TEST_MOTO_MISSING';
const probed = process.env[MOTO_PROBE_ENV];
let missing: string | undefined | null = probed === undefined ? null : probed || undefined;

/** Why moto cannot run here (python3 or the moto package missing), or undefined when it can. */
export function motoMissing(): string | undefined {
  if (missing === null) {
    const probe = spawnSync('python3', ['-c', 'import moto.server, flask'], { encoding: 'utf8', timeout: 30_000 });
    missing = probe.error
      ? `python3 is not installed (${probe.error.message})`
      : probe.status !== 0
        ? `moto's server is not installed for python3 (pip install 'moto[server]'): ${probe.stderr.trim().split('\n').at(-1)}`
        : undefined;
  }
  return missing;
}

export interface TestMoto {
  url: string;
  stop(): Promise<void>;
}

/** The environment the AWS SDK needs against moto (it accepts any credentials). */
export const MOTO_ENV = { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_REGION: 'us-east-1' };

async function spawnMoto(): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const port = await freePort();
  const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
  return { child, url: `http://127.0.0.1:${port}`, stderr: () => stderr };
}

/** Retries `ready` until it resolves, moto exits, or 30 s pass (then moto is stopped). */
async function waitReady(moto: Awaited<ReturnType<typeof spawnMoto>>, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (moto.child.exitCode !== null) throw new Error(`moto exited ${moto.child.exitCode}: ${moto.stderr()}`);
    let why = 'no answer';
    try {
      if (await ready()) return;
    } catch (error) {
      why = (error as Error).message;
    }
    if (Date.now() > deadline) {
      moto.child.kill('SIGTERM');
      throw new Error(`moto did not answer within 30 s: ${why}; ${moto.stderr()}`);
    }
    await new Promise((ok) => setTimeout(ok, 150));
  }
}

/** moto as a plain AWS endpoint (DynamoDB and the rest). */
export async function startMotoServer(): Promise<TestMoto> {
  const moto = await spawnMoto();
  await waitReady(moto, async () => (await fetch(moto.url)).ok);
  const server = serverOf(moto.child, moto.url, '');
  return { url: moto.url, stop: server.stop };
}

/** moto as an S3 store with one bucket, shaped as the s3rver helper's servers are. */
export async function startMoto(bucket = 'atlas-test'): Promise<S3Server> {
  const moto = await spawnMoto();
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: moto.url,
    forcePathStyle: true,
    credentials: { accessKeyId: S3RVER_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: S3RVER_ENV.AWS_SECRET_ACCESS_KEY },
  });
  try {
    await waitReady(moto, async () => (await client.send(new CreateBucketCommand({ Bucket: bucket })), true));
  } finally {
    client.destroy();
  }
  return serverOf(moto.child, moto.url, bucket);
}
