// S3 failures as messages a person can act on (seed 001 §9.4, §9.5, §9.7): missing or invalid
// credentials, permissions (with the fix), a missing bucket, network trouble (with the object and
// a retry), anything else with the object named.
import type { ExitCode } from '../../domain/errors.js';
import { AtlasError, EXIT } from '../../domain/errors.js';

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** An S3 failure's error code (`NoSuchKey`, `PreconditionFailed`…) and HTTP status, as the SDK reports them. */
export function s3Failure(error: unknown): { name: string; status: number | undefined } {
  const e = (error ?? {}) as SdkError;
  return { name: e.name ?? e.Code ?? '', status: e.$metadata?.httpStatusCode };
}

/** Failures of this machine's own file system (writing a download, reading a file to send): not the store's. */
const LOCAL_CODES: Readonly<Record<string, string>> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
};

/** The file system's own error inside `error` (itself or a cause), when there is one. */
function localFailure(error: unknown): NodeJS.ErrnoException | undefined {
  for (
    let e = error as NodeJS.ErrnoException | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as NodeJS.ErrnoException | undefined, depth++
  ) {
    if (typeof e.path === 'string' && typeof e.syscall === 'string' && e.code && LOCAL_CODES[e.code]) return e;
  }
  return undefined;
}

export function s3Error(error: unknown, what: string, location: string): AtlasError {
  if (error instanceof AtlasError) return error;
  const local = localFailure(error);
  if (local) {
    const full = local.code === 'ENOSPC' || local.code === 'EDQUOT';
    return new AtlasError(`${local.path}: ${LOCAL_CODES[local.code!]} (${local.code} on ${local.syscall}), during ${what}`, {
      exitCode: EXIT.failure,
      hint: full
        ? 'free space on that disk, then run the command again (what was written is whole or removed)'
        : 'check that this user may write that folder, then run the command again',
      cause: error,
    });
  }
  const e = (error ?? {}) as SdkError;
  const { name, status } = s3Failure(error);
  const message = e.message ?? String(error);
  const make = (text: string, hint: string, exitCode: ExitCode = EXIT.failure) => new AtlasError(text, { exitCode, hint, cause: error });
  if (name === 'CredentialsProviderError' || /could not load credentials/i.test(message)) {
    return make(
      `no AWS credentials for ${location}: ${message}`,
      'set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run `aws configure`',
      EXIT.key,
    );
  }
  if (name === 'InvalidAccessKeyId' || name === 'SignatureDoesNotMatch' || name === 'InvalidToken' || name === 'ExpiredToken') {
    return make(
      `the AWS credentials were refused by ${location} (${name}): ${message}`,
      'check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the profile in AWS_PROFILE) and that they are for this endpoint',
      EXIT.key,
    );
  }
  if (name === 'AccessDenied' || name === 'Forbidden' || status === 403) {
    return make(
      `access denied to ${what} (${location})`,
      'grant these credentials s3:ListBucket on the bucket and s3:GetObject, s3:PutObject, s3:DeleteObject on the prefix (and s3:GetObject on the source of copies)',
    );
  }
  if (name === 'NoSuchBucket') {
    return make(`the bucket of ${location} does not exist`, 'create it (aws s3 mb s3://BUCKET) or fix sync.store', EXIT.notFound);
  }
  const code = e.code ?? (error as { cause?: { code?: string } })?.cause?.code;
  if (
    (code && NETWORK_CODES.has(code)) ||
    name === 'TimeoutError' ||
    name === 'RequestTimeout' ||
    /socket hang up|network|timed? ?out/i.test(message)
  ) {
    return make(
      `network error on ${what} (${location}): ${code ?? name}: ${message}`,
      'check the connection and sync.s3.endpoint, then run the command again (a sync that stopped midway converges when run again)',
    );
  }
  return make(
    `S3 error on ${what} (${location}): ${name || 'error'}${status ? ` (HTTP ${status})` : ''}: ${message}`,
    'run the command again; if it keeps failing, check sync.store and sync.s3.* settings',
  );
}
