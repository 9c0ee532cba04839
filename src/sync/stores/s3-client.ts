// The S3 client atlas uses for a bucket (stores and exports): one place for its settings, retries
// and timeouts.
import { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../../config/schema.js';
import { JitterRetryStrategy } from './s3-retry.js';
import { regionFrom } from './s3-shape.js';
import type { RequestTimeouts } from './s3-timeouts.js';
import { limitBodies, sdkRequestHandler, timeoutsFrom } from './s3-timeouts.js';

/** The client for a bucket of these settings: the one way atlas talks to S3 (stores and exports). */
export function makeS3Client(settings: Config['sync']['s3'], attempts: number, timeouts: RequestTimeouts = timeoutsFrom()): S3Client {
  // The SDK warns on every run under Node 20 about its own future releases; atlas supports
  // Node >= 20.19 and pins the SDK, so the warning tells a user nothing they can act on.
  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  const client = new S3Client({
    region: regionFrom(settings),
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    forcePathStyle: settings.force_path_style,
    // Many S3-compatible servers reject the SDK's default CRC checksums; the MD5s atlas keeps
    // (and Content-MD5 on uploads) already cover integrity.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // The middleware stack is built once per command type, not once per request: a pull or a
    // push sends thousands of the same command, and atlas never changes the stack.
    cacheMiddleware: true,
    retryStrategy: new JitterRetryStrategy(attempts),
    maxAttempts: attempts,
    // Connect, idle and whole-request timeouts, as the hand-signed requests have (s3-timeouts.ts).
    requestHandler: sdkRequestHandler(timeouts),
  });
  limitBodies(client, timeouts);
  return client;
}
