// Browser sessions of the board (docs/ui.md): a bearer token posted once to POST /session (or the
// one-time code `atlas ui` prints) becomes a random session id in an HttpOnly, SameSite=Strict
// cookie, so no token ever sits in a URL or in the page's storage. Requests a cookie authenticates
// that change something must also carry the session's CSRF token in a header (double submit: the
// same value is in a cookie the page can read, and only a page of this origin can read it).
// Sessions live in memory: a restarted server signs everyone out.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const SESSION_COOKIE = 'atlas_session';
export const CSRF_COOKIE = 'atlas_csrf';
export const CSRF_HEADER = 'x-csrf-token';
const SESSION_MS = 12 * 3600_000;
const MAX_SESSIONS = 10_000;

export interface BoardSession {
  account: string;
  readOnly: boolean;
  /** The bearer token it was made from, re-verified on each request (revoked: signed out); none for `atlas ui`. */
  token: string | undefined;
  csrf: string;
  expires: number;
}

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(sha(a), 'hex');
  const y = Buffer.from(sha(b), 'hex');
  return timingSafeEqual(x, y) && a.length === b.length;
}

/** The request's cookies (the first value of each name). */
export function readCookies(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    const name = i < 0 ? '' : part.slice(0, i).trim();
    if (name && !out.has(name)) out.set(name, part.slice(i + 1).trim());
  }
  return out;
}

export class BoardSessions {
  /** Keyed by the SHA-256 of the session id: a heap dump does not hold usable cookies. */
  private readonly sessions = new Map<string, BoardSession>();
  private loginCode: string | undefined;

  /** `atlas ui`: a code that signs in once as `account`. */
  constructor(private readonly local?: { account: string; code: string }) {
    this.loginCode = local?.code;
  }

  create(account: string, readOnly: boolean, token: string | undefined): { id: string; session: BoardSession } {
    const now = Date.now();
    if (this.sessions.size >= MAX_SESSIONS) {
      for (const [k, s] of this.sessions) if (s.expires <= now) this.sessions.delete(k);
      // Still full: the oldest goes (Map keeps insertion order).
      if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    }
    const id = randomBytes(32).toString('base64url');
    const session: BoardSession = { account, readOnly, token, csrf: randomBytes(24).toString('base64url'), expires: now + SESSION_MS };
    this.sessions.set(sha(id), session);
    return { id, session };
  }

  /** The one-time code of `atlas ui`, used up by its first correct use. */
  redeem(code: string): { id: string; session: BoardSession } | undefined {
    if (!this.local || this.loginCode === undefined || !sameText(code, this.loginCode)) return undefined;
    this.loginCode = undefined;
    return this.create(this.local.account, false, undefined);
  }

  /** The session the request's cookie names, if it is live. */
  of(req: IncomingMessage): { id: string; session: BoardSession } | undefined {
    const id = readCookies(req).get(SESSION_COOKIE);
    if (!id || !/^[\w-]{20,100}$/.test(id)) return undefined;
    const session = this.sessions.get(sha(id));
    if (!session) return undefined;
    if (session.expires <= Date.now()) {
      this.sessions.delete(sha(id));
      return undefined;
    }
    return { id, session };
  }

  end(id: string): void {
    this.sessions.delete(sha(id));
  }

  /** Double submit: the header must equal both the readable cookie and the session's own value. */
  csrfOk(req: IncomingMessage, session: BoardSession): boolean {
    const header = req.headers[CSRF_HEADER];
    const cookie = readCookies(req).get(CSRF_COOKIE);
    if (typeof header !== 'string' || !cookie) return false;
    return sameText(header, session.csrf) && sameText(cookie, session.csrf);
  }
}

/** Set-Cookie values for a new session (Secure when the page came over https). */
export function sessionCookies(id: string, session: BoardSession, secure: boolean): string[] {
  const age = Math.floor((session.expires - Date.now()) / 1000);
  const tail = `Path=/; SameSite=Strict; Max-Age=${age}${secure ? '; Secure' : ''}`;
  return [`${SESSION_COOKIE}=${id}; HttpOnly; ${tail}`, `${CSRF_COOKIE}=${session.csrf}; ${tail}`];
}

export function clearedCookies(): string[] {
  return [`${SESSION_COOKIE}=; HttpOnly; Path=/; SameSite=Strict; Max-Age=0`, `${CSRF_COOKIE}=; Path=/; SameSite=Strict; Max-Age=0`];
}
