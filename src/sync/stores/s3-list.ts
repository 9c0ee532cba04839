// Listings of an S3 store: one page (hand-signed when it can be, else through the SDK), and every
// object under a prefix.
import type { DirectRequests } from './s3-direct.js';
import { s3Error } from './s3-errors.js';
import type { ListedPage } from './s3-list-xml.js';
import type { LazySdk } from './s3-sdk.js';

export interface S3Place {
  sdk: LazySdk;
  direct: DirectRequests;
  bucket: string;
  /** s3://bucket/prefix, for messages. */
  location: string;
  /** Whether DeleteObjects is still tried (false once the server refused it). */
  batch: { ok: boolean };
}

/** One ListObjectsV2 page of the keys under `prefix`; a failure is the SDK's or the network's, for the caller to name. */
export async function listPage(
  place: S3Place,
  prefix: string,
  options: { delimiter?: string; token?: string | undefined; maxKeys?: number } = {},
): Promise<ListedPage> {
  const { delimiter, token, maxKeys } = options;
  const asked = { ...(delimiter ? { delimiter } : {}), ...(token ? { token } : {}), ...(maxKeys ? { maxKeys } : {}) };
  const direct = await place.direct.list(prefix, asked);
  if (direct) return direct;
  const { client, S3 } = await place.sdk.get();
  const page = await client.send(
    new S3.ListObjectsV2Command({
      Bucket: place.bucket,
      Prefix: prefix,
      ...(delimiter ? { Delimiter: delimiter } : {}),
      ...(token ? { ContinuationToken: token } : {}),
      ...(maxKeys ? { MaxKeys: maxKeys } : {}),
    }),
  );
  return {
    objects: (page.Contents ?? []).flatMap((o) =>
      o.Key ? [{ key: o.Key, size: o.Size ?? 0, modifiedMs: o.LastModified?.getTime() ?? 0 }] : [],
    ),
    folders: (page.CommonPrefixes ?? []).flatMap((p) => (p.Prefix ? [p.Prefix] : [])),
    next: page.IsTruncated ? page.NextContinuationToken : undefined,
  };
}

/** Every object whose key starts with `prefix` (which ends with "/"), with its size. */
export async function listUnder(place: S3Place, prefix: string): Promise<ListedPage['objects']> {
  const found: ListedPage['objects'] = [];
  let token: string | undefined;
  do {
    const page = await listPage(place, prefix, { token }).catch((error: unknown) => {
      throw s3Error(error, `a listing of ${prefix}`, place.location);
    });
    // A key outside the prefix (a server that ignores Prefix) is never acted on.
    for (const o of page.objects) if (o.key.startsWith(prefix)) found.push(o);
    token = page.next;
  } while (token);
  return found;
}
