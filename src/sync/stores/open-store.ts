// Picks the store's backend from sync.store: a folder (dir-store.ts) or a bucket (s3-store.ts).
// Apart from the SyncStore interface (store.ts), which the backends implement and import.
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../config/schema.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { SyncStore } from './store.js';

export type StoreAddress = { kind: 'dir'; path: string } | { kind: 's3'; bucket: string; prefix: string };

/** `sync.store` as a folder or a bucket; empty means `$ATLAS_HOME/store`. */
export function parseStoreAddress(value: string, home: string): StoreAddress {
  const text = value.trim();
  if (text === '') return { kind: 'dir', path: join(home, 'store') };
  if (text.startsWith('s3://')) {
    const rest = text.slice(5);
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const prefix = slash < 0 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '');
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
      throw new AtlasError(`sync.store ${text}: "${bucket}" is not a valid bucket name`, {
        exitCode: EXIT.input,
        hint: 'write it as s3://bucket/prefix',
      });
    }
    if (prefix.split('/').some((s) => s === '.' || s === '..') || prefix.includes('//')) {
      throw new AtlasError(`sync.store ${text}: the prefix has an empty, "." or ".." segment`, { exitCode: EXIT.input });
    }
    return { kind: 's3', bucket, prefix };
  }
  // Any other scheme, or a mistyped one ("s3:/bucket", "s3:bucket"), is not a folder's name.
  if (/^[a-z][a-z0-9+.-]*:/i.test(text) && !text.startsWith('file://')) {
    throw new AtlasError(`sync.store ${text}: unsupported store`, {
      exitCode: EXIT.input,
      hint: 'use a folder path, a file:// URL or s3://bucket/prefix',
    });
  }
  let path = text.startsWith('file://') ? fileURLToPath(text) : text;
  path = path.replace(/^\$ATLAS_HOME(?=\/|$)/, home).replace(/^~(?=\/|$)/, homedir());
  // A relative folder would be another store in each directory atlas runs from.
  if (!isAbsolute(path)) {
    throw new AtlasError(`sync.store ${text}: a relative folder would be a different store in each directory atlas runs from`, {
      exitCode: EXIT.input,
      hint: 'give an absolute path, ~/path, $ATLAS_HOME/path, file:///path or s3://bucket/prefix',
    });
  }
  return { kind: 'dir', path };
}

/** Opens the configured store; the S3 client is loaded only when an s3:// store is used. */
export async function openStore(config: Config, home: string): Promise<SyncStore> {
  const address = parseStoreAddress(config.sync.store, home);
  if (address.kind === 'dir') {
    const { DirectoryStore } = await import('./dir-store.js');
    return new DirectoryStore(address.path);
  }
  const { S3Store } = await import('./s3-store.js');
  return new S3Store(address.bucket, address.prefix, config.sync.s3, config.sync.retries);
}
