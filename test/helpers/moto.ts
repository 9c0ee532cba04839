// Starts moto's S3 server (`python3 -m moto.server`, a second S3 implementation beside s3rver, so
// that neither's quirks are the only truth) on 127.0.0.1 for a test file, with one bucket; stop()
// in afterAll. motoMissing() says why the moto tests are skipped on a machine without it.
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { S3Server } from './s3rver.js';
import { S3RVER_ENV, serverOf } from './s3rver.js';

let missing: string | undefined | null = null;

/** Why moto cannot run here (python3 or the moto package missing), or undefined when it can. */
export function motoMissing(): string | undefined {
  if (missing === null) {
    const probe = spawnSync('python3', ['-c', 'import moto.server, flask'], { encoding: 'utf8', timeout: 30_000 });
    missing = probe.error ? `python3 is not installed (${probe.error.message})` : probe.status !== 0 ? `moto's server is not installed for python3 (pip install 'moto[server]'): ${probe.stderr.trim().split('\n').at(-1)}` : undefined;
  }
  return missing;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((ok) => probe.listen(0, '127.0.0.1', ok));
  const { port } = probe.address() as AddressInfo;
  await new Promise((ok) => probe.close(ok));
  return port;
}

export async function startMoto(bucket = 'atlas-test'): Promise<S3Server> {
  const port = await freePort();
  const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: S3RVER_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: S3RVER_ENV.AWS_SECRET_ACCESS_KEY } });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`moto exited ${child.exitCode}: ${stderr}`);
    try {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        child.kill('SIGTERM');
        throw new Error(`moto did not answer within 30 s: ${(error as Error).message}; ${stderr}`);
      }
      await new Promise((ok) => setTimeout(ok, 200));
    }
  }
  client.destroy();
  return serverOf(child, endpoint, bucket);
}
