// Starts s3rver (test/fixtures/s3rver-child.mjs) in a child process for a test file; stop() in afterAll.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { LazySdk } from '../../src/sync/stores/s3-sdk.js';

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

/** s3rver's keys and no other source the SDK could find instead: no profile, config file or instance metadata. */
export const S3RVER_ONLY_ENV = {
  ...S3RVER_ENV,
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  AWS_CONFIG_FILE: '/nonexistent',
};

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
  return serverOf(child, `http://127.0.0.1:${port}`, bucket, () => rmSync(dir, { recursive: true, force: true }));
}

/**
 * An S3 server running as `child` at `endpoint`, with s3rver's account (moto takes any
 * credentials, so one environment serves both); stop() ends it, then runs `cleanup`.
 */
export function serverOf(child: ChildProcess, endpoint: string, bucket: string, cleanup: () => void = () => undefined): S3Server {
  return {
    endpoint,
    bucket,
    config: { store: `s3://${bucket}/stores`, endpoint },
    env: S3RVER_ENV,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((ok) => child.once('exit', ok));
        child.kill('SIGTERM');
        await exited;
      }
      cleanup();
    },
  };
}

const clients = new Map<string, S3Client>();

/** A client of the server with s3rver's account (one per endpoint, reused). */
export function s3rverClient(server: S3Server): S3Client {
  let client = clients.get(server.endpoint);
  if (!client) {
    client = new S3Client({
      region: 'us-east-1',
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    clients.set(server.endpoint, client);
  }
  return client;
}

/** Every key under `prefix`, sorted (all pages). */
export async function listKeys(server: S3Server, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3rverClient(server).send(
      new ListObjectsV2Command({ Bucket: server.bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
    );
    out.push(...(page.Contents ?? []).map((c) => c.Key!));
    token = page.NextContinuationToken;
  } while (token);
  return out.sort();
}

/** atlas's holder of a client a test made, made at once (its hooks attach before the test's own requests). */
export async function sdkOf(client: S3Client): Promise<LazySdk> {
  const sdk = new LazySdk(() => client);
  await sdk.get();
  return sdk;
}
