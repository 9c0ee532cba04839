// What the S3 sync tests share: one s3rver for the test file behind a fault proxy of its own, and
// the environment set for it (s3rver's keys and no other credential source, plus `env`, without
// `unset`) while the file's tests run, restored after.
import { afterAll, beforeAll } from 'vitest';
import type { FaultProxy } from './s3-fault-proxy.js';
import { startFaultProxy } from './s3-fault-proxy.js';
import type { S3Server } from './s3rver.js';
import { S3RVER_ONLY_ENV, startS3rver } from './s3rver.js';
import { removeScratch } from './sync-fixtures.js';

export interface ProxiedS3rver {
  readonly server: S3Server;
  readonly proxy: FaultProxy;
}

/** Starts them in the file's beforeAll and stops them (and removes its scratch folders) in its afterAll. */
export function s3rverBehindProxy(bucket: string, env: Record<string, string> = {}, unset: readonly string[] = []): ProxiedS3rver {
  const started: { server?: S3Server; proxy?: FaultProxy } = {};
  const savedEnv = { ...process.env };
  beforeAll(async () => {
    started.server = await startS3rver(bucket);
    started.proxy = await startFaultProxy(started.server.endpoint);
    Object.assign(process.env, S3RVER_ONLY_ENV, env);
    for (const name of unset) delete process.env[name];
  }, 20_000);
  afterAll(async () => {
    process.env = savedEnv;
    await started.proxy?.stop();
    await started.server?.stop();
    removeScratch();
  });
  return {
    get server() {
      return started.server!;
    },
    get proxy() {
      return started.proxy!;
    },
  };
}
