// The AWS SDK, loaded when a request needs it. A push or pull against an S3-compatible endpoint
// with credentials in the environment sends every request hand-signed (s3-direct.ts) and never
// loads the SDK: its ~400 KB of modules cost ~6 MB of memory and ~40 ms of every sync command.
// Whatever the hand-signed path cannot do or did not expect (other credentials, multipart uploads,
// copies, an error answer to name) goes through the SDK, loaded then, with the same settings.
import type * as S3 from '@aws-sdk/client-s3';
import type { Config } from '../../config/schema.js';
import type { RequestTimeouts } from './s3-timeouts.js';

export interface Sdk {
  client: S3.S3Client;
  /** The SDK's module: its commands. */
  S3: typeof S3;
}

export class LazySdk {
  private loading: Promise<Sdk> | undefined;
  private created: S3.S3Client | undefined;
  private readonly hooks: ((client: S3.S3Client) => void)[] = [];

  constructor(
    private readonly settings: Config['sync']['s3'],
    private readonly attempts: number,
    private readonly timeouts: RequestTimeouts,
  ) {}

  /** A holder of a client made already (tests, and callers that use the SDK anyway). */
  static of(client: S3.S3Client): LazySdk {
    const sdk = new LazySdk({ endpoint: '', force_path_style: false, region: '' }, 1, { connectMs: 0, idleMs: 0, requestMs: 0 });
    sdk.created = client;
    sdk.loading = import('@aws-sdk/client-s3').then((module) => ({ client, S3: module }));
    return sdk;
  }

  /** The client, made on the first call. */
  get(): Promise<Sdk> {
    this.loading ??= Promise.all([import('@aws-sdk/client-s3'), import('./s3-client.js')]).then(([module, { makeS3Client }]) => {
      const client = makeS3Client(this.settings, this.attempts, this.timeouts);
      this.created = client;
      for (const hook of this.hooks) hook(client);
      return { client, S3: module };
    });
    return this.loading;
  }

  /** The client when it was made already (its clock offset, learned from the server, is worth using). */
  get client(): S3.S3Client | undefined {
    return this.created;
  }

  /** Runs `hook` on the client when it is made (at once when it was). */
  whenMade(hook: (client: S3.S3Client) => void): void {
    if (this.created) hook(this.created);
    else this.hooks.push(hook);
  }
}
