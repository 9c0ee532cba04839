// Bearer tokens of `atlas serve`, kept in the server state (src/server/state; the embedded SQLite
// file or PostgreSQL): only the SHA-256 of each token, its id and account, and optionally when it
// expires and whether it may only read (GET). A token is shown once, when created; a revoked one
// stays recorded as revoked, so it never comes back.
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../crypto/hash.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { toTimestamp } from '../../domain/time.js';
import { withServerState } from '../cluster/server-state.js';
import { HttpError } from '../http/http.js';
import type { TokenRecord } from '../state/token-file.js';
import { ACCOUNT_PATTERN } from '../state/token-file.js';
import type { ServerState, TokenRow } from '../state/types.js';

export type { TokenRecord } from '../state/token-file.js';
export { ACCOUNT_PATTERN, readTokens, serverDir, tokensPath } from '../state/token-file.js';

export interface TokenOptions {
  /** Lifetime in milliseconds (undefined: no expiry). */
  expiresInMs?: number | undefined;
  readOnly?: boolean | undefined;
  /** server.database ('' or undefined: ATLAS_DATABASE_URL, else the embedded SQLite file). */
  database?: string | undefined;
}

/** Who a presented token speaks for. */
export type Verified = { ok: true; id: string; account: string; readOnly: boolean } | { ok: false; reason: 'unknown' | 'expired' };

const TOKEN_PREFIX = 'atlas_';

function toRecord(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    account: row.account,
    sha256: row.sha256,
    created_at: row.created_at,
    expires_at: row.expires_at,
    read_only: row.read_only,
  };
}

export async function createToken(
  home: string,
  account: string,
  now = new Date(),
  options: TokenOptions = {},
): Promise<{ token: string; record: TokenRecord }> {
  if (!ACCOUNT_PATTERN.test(account)) {
    throw new AtlasError(`"${account}" is not an account name`, {
      exitCode: EXIT.input,
      hint: 'use letters, digits, ".", "-" and "_" (at most 64 characters), starting with a letter or digit',
    });
  }
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  if (options.expiresInMs !== undefined && !(options.expiresInMs > 0)) {
    throw new AtlasError('a token must live longer than 0', {
      exitCode: EXIT.input,
      hint: 'pass --expires-in with a duration such as 12h or 30d',
    });
  }
  const row: TokenRow = {
    id: `tok-${randomBytes(4).toString('hex')}`,
    account,
    sha256: sha256Hex(token),
    created_at: toTimestamp(now),
    expires_at: options.expiresInMs !== undefined ? toTimestamp(new Date(now.getTime() + options.expiresInMs)) : null,
    read_only: options.readOnly === true,
  };
  await withServerState(home, options.database, (state) => state.addToken(row));
  return { token, record: toRecord(row) };
}

export async function revokeToken(home: string, id: string, database?: string): Promise<TokenRecord> {
  const revoked = await withServerState(home, database, (state) => state.revokeToken(id));
  if (!revoked) {
    throw new AtlasError(`no token with id ${id}`, { exitCode: EXIT.notFound, hint: '`atlas serve token list` shows the ids' });
  }
  return toRecord(revoked);
}

/** The live tokens (never revoked ones), oldest first. */
export async function listTokens(home: string, database?: string): Promise<TokenRecord[]> {
  return (await withServerState(home, database, (state) => state.listTokens())).map(toRecord);
}

/**
 * Checks bearer tokens against the state on every request, so create and revoke take effect on
 * every running server at once. The lookup is by the presented token's SHA-256: what a wrong
 * guess costs in time says nothing about any real token.
 */
export class TokenVerifier {
  constructor(private readonly state: () => Promise<ServerState>) {}

  /** How many live tokens exist (start-up says so when there are none). */
  async count(): Promise<number> {
    return (await (await this.state()).listTokens()).length;
  }

  /** The account of a presented token, or undefined. */
  async account(token: string, now = Date.now()): Promise<string | undefined> {
    const v = await this.verify(token, now);
    return v.ok ? v.account : undefined;
  }

  /** Who the token speaks for, or why it is refused (unknown, or expired); 503 while the state does not answer. */
  async verify(token: string, now = Date.now()): Promise<Verified> {
    let row: TokenRow | undefined;
    try {
      row = await (await this.state()).tokenByHash(sha256Hex(token));
    } catch {
      throw new HttpError(503, 'state_unavailable', 'the server state does not answer (its database may be down): retry shortly', {
        retry_after_s: 1,
      });
    }
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.expires_at && now >= Date.parse(row.expires_at)) return { ok: false, reason: 'expired' };
    return { ok: true, id: row.id, account: row.account, readOnly: row.read_only };
  }
}
