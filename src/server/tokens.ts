// Bearer tokens of `atlas serve`: $ATLAS_HOME/server/tokens.json (0600, folder 0700) holds only
// the SHA-256 of each token, its id and its account, and optionally when it expires and whether it
// may only read (GET). A token is shown once, when created.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { toTimestamp } from '../domain/time.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { withLock } from '../store/lock.js';

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

export interface TokenOptions {
  /** Lifetime in milliseconds (undefined: no expiry). */
  expiresInMs?: number | undefined;
  readOnly?: boolean | undefined;
}

/** Who a presented token speaks for. */
export type Verified = { ok: true; id: string; account: string; readOnly: boolean } | { ok: false; reason: 'unknown' | 'expired' };

interface TokenFile {
  version: 1;
  tokens: TokenRecord[];
}

export const ACCOUNT_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/i;
const TOKEN_PREFIX = 'atlas_';

export function serverDir(home: string): string {
  return join(home, 'server');
}

export function tokensPath(home: string): string {
  return join(serverDir(home), 'tokens.json');
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function isRecord(v: unknown): v is TokenRecord {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  return typeof r['id'] === 'string' && typeof r['account'] === 'string' && typeof r['sha256'] === 'string' && /^[0-9a-f]{64}$/.test(r['sha256']) && typeof r['created_at'] === 'string' &&
    (r['expires_at'] === undefined || r['expires_at'] === null || (typeof r['expires_at'] === 'string' && Number.isFinite(Date.parse(r['expires_at'])))) &&
    (r['read_only'] === undefined || typeof r['read_only'] === 'boolean');
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
  const tokens = (data as Partial<TokenFile> | undefined)?.tokens;
  if (!Array.isArray(tokens) || !tokens.every(isRecord)) {
    throw new AtlasError(`${path} is not a valid token file`, {
      exitCode: EXIT.key,
      hint: 'restore it from a backup, or move it away and create new tokens with `atlas serve token create --account NAME`',
    });
  }
  return tokens;
}

async function updateTokens(home: string, change: (tokens: TokenRecord[]) => TokenRecord[]): Promise<void> {
  const dir = serverDir(home);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = tokensPath(home);
  await withLock(path, () => {
    const next: TokenFile = { version: 1, tokens: change(readTokens(home)) };
    writeFileAtomic(path, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  });
}

export async function createToken(home: string, account: string, now = new Date(), options: TokenOptions = {}): Promise<{ token: string; record: TokenRecord }> {
  if (!ACCOUNT_PATTERN.test(account)) {
    throw new AtlasError(`"${account}" is not an account name`, {
      exitCode: EXIT.input,
      hint: 'use letters, digits, ".", "-" and "_" (at most 64 characters), starting with a letter or digit',
    });
  }
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  if (options.expiresInMs !== undefined && !(options.expiresInMs > 0)) {
    throw new AtlasError('a token must live longer than 0', { exitCode: EXIT.input, hint: 'pass --expires-in with a duration such as 12h or 30d' });
  }
  const record: TokenRecord = {
    id: `tok-${randomBytes(4).toString('hex')}`,
    account,
    sha256: sha256(token).toString('hex'),
    created_at: toTimestamp(now),
    expires_at: options.expiresInMs !== undefined ? toTimestamp(new Date(now.getTime() + options.expiresInMs)) : null,
    read_only: options.readOnly === true,
  };
  await updateTokens(home, (tokens) => [...tokens, record]);
  return { token, record };
}

export async function revokeToken(home: string, id: string): Promise<TokenRecord> {
  let removed: TokenRecord | undefined;
  await updateTokens(home, (tokens) => {
    removed = tokens.find((t) => t.id === id);
    return tokens.filter((t) => t.id !== id);
  });
  if (!removed) {
    throw new AtlasError(`no token with id ${id}`, { exitCode: EXIT.notFound, hint: '`atlas serve token list` shows the ids' });
  }
  return removed;
}

/**
 * Checks bearer tokens against the file, re-read when it changes (so create and revoke take
 * effect on a running server). Every record is compared in constant time, with no early exit.
 */
export class TokenVerifier {
  private records: { id: string; account: string; hash: Buffer; expires: number; readOnly: boolean }[] = [];
  private seen = '';

  constructor(private readonly home: string) {}

  private refresh(): void {
    let stamp = 'missing';
    try {
      const st = statSync(tokensPath(this.home));
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      // No file: no tokens.
    }
    if (stamp === this.seen) return;
    this.records = readTokens(this.home).map((t) => ({
      id: t.id,
      account: t.account,
      hash: Buffer.from(t.sha256, 'hex'),
      expires: t.expires_at ? Date.parse(t.expires_at) : Infinity,
      readOnly: t.read_only === true,
    }));
    this.seen = stamp;
  }

  /** How many tokens exist (start-up says so when there are none). */
  count(): number {
    this.refresh();
    return this.records.length;
  }

  /** The account of a presented token, or undefined. */
  account(token: string, now = Date.now()): string | undefined {
    const v = this.verify(token, now);
    return v.ok ? v.account : undefined;
  }

  /** Who the token speaks for, or why it is refused (unknown, or expired). */
  verify(token: string, now = Date.now()): Verified {
    try {
      this.refresh();
    } catch {
      // A damaged file authorises no one until it is fixed; the old records are dropped.
      this.records = [];
      return { ok: false, reason: 'unknown' };
    }
    const presented = sha256(token);
    let found: (typeof this.records)[number] | undefined;
    for (const r of this.records) {
      if (timingSafeEqual(presented, r.hash) && found === undefined) found = r;
    }
    if (!found) return { ok: false, reason: 'unknown' };
    if (now >= found.expires) return { ok: false, reason: 'expired' };
    return { ok: true, id: found.id, account: found.account, readOnly: found.readOnly };
  }
}
