// Every S3 request has three timeouts, the same on the SDK's path and on the hand-signed one
// (s3-direct.ts): to connect, without a byte in either direction (idle), and for the whole request,
// its body included. A request that times out is retried as any network failure (s3-retry.ts); a
// push or pull never waits on a stalled connection forever (before, the SDK had none: a push sat
// 683 s on one established socket until killed). Set by ATLAS_SYNC_CONNECT_TIMEOUT,
// ATLAS_SYNC_IDLE_TIMEOUT and ATLAS_SYNC_REQUEST_TIMEOUT, in seconds (docs/sync.md#timeouts).
import * as http from 'node:http';
import * as https from 'node:https';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { AtlasError, EXIT } from '../../domain/errors.js';

export interface RequestTimeouts {
  connectMs: number;
  idleMs: number;
  /** The whole request, from its start to the last byte of its answer. */
  requestMs: number;
}

/** rclone's --contimeout is 1 min and --timeout (idle) 5 min; a request is at most 16 MiB up or a blob down. */
export const DEFAULT_TIMEOUTS: RequestTimeouts = { connectMs: 30_000, idleMs: 60_000, requestMs: 30 * 60_000 };

const VARIABLES = {
  connectMs: 'ATLAS_SYNC_CONNECT_TIMEOUT',
  idleMs: 'ATLAS_SYNC_IDLE_TIMEOUT',
  requestMs: 'ATLAS_SYNC_REQUEST_TIMEOUT',
} as const;

/** The timeouts, each from its variable (seconds, > 0, decimals allowed) when set. */
export function timeoutsFrom(env: NodeJS.ProcessEnv = process.env): RequestTimeouts {
  const out = { ...DEFAULT_TIMEOUTS };
  for (const [key, name] of Object.entries(VARIABLES) as [keyof RequestTimeouts, string][]) {
    const text = env[name]?.trim();
    if (!text) continue;
    const seconds = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
    if (!(seconds > 0))
      throw new AtlasError(`${name}=${JSON.stringify(env[name])} is not a number of seconds`, {
        exitCode: EXIT.input,
        hint: `set it to a number of seconds above 0 (e.g. ${name}=60), or unset it`,
      });
    out[key] = Math.max(1, Math.round(seconds * 1000));
  }
  return out;
}

export function timeoutError(what: string, ms: number): Error {
  return Object.assign(new Error(`${what} timed out after ${ms / 1000} s`), { name: 'TimeoutError', code: 'ETIMEDOUT' });
}

/** The SDK's request handler with these timeouts (connect, idle as its socket timeout, whole request until the answer's head). */
export function sdkRequestHandler(t: RequestTimeouts): Record<string, unknown> {
  const agent = { keepAlive: true, maxSockets: 64, timeout: t.idleMs };
  return {
    connectionTimeout: t.connectMs,
    socketTimeout: t.idleMs,
    requestTimeout: t.requestMs,
    throwOnRequestTimeout: true,
    httpAgent: new http.Agent(agent),
    httpsAgent: new https.Agent(agent),
  };
}

/**
 * The rest of the whole-request timeout for an answer's body: the SDK's own ends with the answer's
 * head, and a body that trickles a byte a minute never goes idle. The body is destroyed with a
 * timeout (retried like a cut body) when the request's time is up.
 */
export function limitBodies(client: S3Client, t: RequestTimeouts): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const started = Date.now();
      const result = await next(args);
      const body = (result.response as { body?: unknown }).body as Readable | undefined;
      if (body && typeof body.destroy === 'function' && typeof body.once === 'function') {
        const left = Math.max(1, t.requestMs - (Date.now() - started));
        const timer = setTimeout(() => body.destroy(timeoutError('the request', t.requestMs)), left);
        timer.unref();
        body.once('close', () => clearTimeout(timer));
      }
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'atlasWholeRequestTimeout' },
  );
}
