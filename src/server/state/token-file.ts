// tokens.json, where atlas kept the server's bearer tokens before the server state
// (src/server/state): read only to adopt its tokens (src/server/cluster/server-state.ts), never written.
// It held only the SHA-256 of each token, its id and account, expiry and read-only flag.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';

export interface TokenRecord {
  id: string;
  account: string;
  /** Hex SHA-256 of the token. */
  sha256: string;
  created_at: string;
  /** After this moment the token is refused (absent or null: never). */
  expires_at?: string | null;
  /** Only GET and HEAD requests (absent: false). */
  read_only?: boolean;
}

export const ACCOUNT_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/i;

export function serverDir(home: string): string {
  return join(home, 'server');
}

export function tokensPath(home: string): string {
  return join(serverDir(home), 'tokens.json');
}

function isRecord(v: unknown): v is TokenRecord {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r['id'] === 'string' &&
    typeof r['account'] === 'string' &&
    typeof r['sha256'] === 'string' &&
    /^[0-9a-f]{64}$/.test(r['sha256']) &&
    typeof r['created_at'] === 'string' &&
    (r['expires_at'] === undefined ||
      r['expires_at'] === null ||
      (typeof r['expires_at'] === 'string' && Number.isFinite(Date.parse(r['expires_at'])))) &&
    (r['read_only'] === undefined || typeof r['read_only'] === 'boolean')
  );
}

/** The token file's records; a missing file is no tokens, a damaged one an error naming it. */
export function readTokens(home: string): TokenRecord[] {
  const path = tokensPath(home);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new AtlasError(`cannot read ${path}: ${(error as Error).message}`, { exitCode: EXIT.key, cause: error });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  const tokens = (data as { tokens?: unknown } | undefined)?.tokens;
  if (!Array.isArray(tokens) || !tokens.every(isRecord)) {
    throw new AtlasError(`${path} is not a valid token file`, {
      exitCode: EXIT.key,
      hint: 'restore it from a backup, or move it away (its tokens stop working) and create new ones with `atlas serve token create --account NAME`',
    });
  }
  return tokens;
}
