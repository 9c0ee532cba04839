// The AWS SDK, loaded when a request needs it. A push or pull against an S3-compatible endpoint
// with credentials in the environment sends every request hand-signed (s3-direct.ts) and never
// loads the SDK: its ~400 KB of modules cost ~6 MB of memory and ~40 ms of every sync command.
// Whatever the hand-signed path cannot do or did not expect (other credentials, multipart uploads,
// copies, an error answer to name) goes through the SDK, loaded then.
import type * as S3 from '@aws-sdk/client-s3';

export interface Sdk {
  client: S3.S3Client;
  /** The SDK's module: its commands. */
  S3: typeof S3;
}

export class LazySdk {
  private loading: Promise<Sdk> | undefined;
  private made: S3.S3Client | undefined;
  private readonly hooks: ((client: S3.S3Client) => void)[] = [];

  /** `make`: the client, made on first need (it may import the SDK itself). */
  constructor(private readonly make: () => S3.S3Client | Promise<S3.S3Client>) {}

  /** The client and the SDK's commands, loaded on the first call. */
  get(): Promise<Sdk> {
    this.loading ??= Promise.all([import('@aws-sdk/client-s3'), this.make()]).then(([module, client]) => {
      this.made = client;
      for (const hook of this.hooks.splice(0)) hook(client);
      return { client, S3: module };
    });
    return this.loading;
  }

  /** The client when it was made already (its clock offset, learned from the server, is worth using). */
  get client(): S3.S3Client | undefined {
    return this.made;
  }

  /** Runs `hook` on the client when it is made (at once when it was). */
  whenMade(hook: (client: S3.S3Client) => void): void {
    if (this.made) hook(this.made);
    else this.hooks.push(hook);
  }
}
