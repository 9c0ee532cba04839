// Board sessions on their own: cookie parsing, the double-submit check, one-time codes, expiry and
// the cap on sessions held in memory.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { BoardSessions, clearedCookies, readCookies, sessionCookies } from '../src/server/board/board-sessions.js';

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('board sessions', () => {
  it('reads cookies (first value wins, junk ignored)', () => {
    const c = readCookies(req({ cookie: 'a=1; b=2; a=3; junk; =x; c = 4 ' }));
    expect([...c]).toEqual([
      ['a', '1'],
      ['b', '2'],
      ['c', '4'],
    ]);
    expect(readCookies(req({})).size).toBe(0);
  });

  it('finds a session by its cookie; the CSRF header must match both the cookie and the session', () => {
    const s = new BoardSessions();
    const { id, session } = s.create('alice', false, 'tok');
    const cookie = `atlas_session=${id}; atlas_csrf=${session.csrf}`;
    expect(s.of(req({ cookie }))?.session.account).toBe('alice');
    expect(s.of(req({ cookie: 'atlas_session=short' }))).toBeUndefined();
    expect(s.of(req({ cookie: `atlas_session=${'x'.repeat(43)}` }))).toBeUndefined();
    expect(s.csrfOk(req({ cookie, 'x-csrf-token': session.csrf }), session)).toBe(true);
    expect(s.csrfOk(req({ cookie }), session)).toBe(false);
    expect(s.csrfOk(req({ cookie: `atlas_session=${id}`, 'x-csrf-token': session.csrf }), session)).toBe(false);
    expect(s.csrfOk(req({ cookie: `atlas_session=${id}; atlas_csrf=other`, 'x-csrf-token': 'other' }), session)).toBe(false);
    expect(s.csrfOk(req({ cookie, 'x-csrf-token': `${session.csrf}x` }), session)).toBe(false);
    s.end(id);
    expect(s.of(req({ cookie }))).toBeUndefined();
  });

  it('an expired session is gone; one-time codes work once and only with `atlas ui`', () => {
    const s = new BoardSessions({ account: 'local', code: 'the-code-0123456789' });
    const { id, session } = s.create('alice', true, undefined);
    session.expires = Date.now() - 1;
    expect(s.of(req({ cookie: `atlas_session=${id}` }))).toBeUndefined();
    expect(s.redeem('wrong')).toBeUndefined();
    expect(s.redeem('the-code-0123456789')?.session).toMatchObject({ account: 'local', readOnly: false, token: undefined });
    expect(s.redeem('the-code-0123456789')).toBeUndefined();
    expect(new BoardSessions().redeem('anything')).toBeUndefined();
  });

  it('holds at most 10,000 sessions: expired ones go first, then the oldest', () => {
    const s = new BoardSessions();
    const first = s.create('a', false, undefined);
    const second = s.create('a', false, undefined);
    second.session.expires = 0;
    for (let i = 0; i < 9_998; i++) s.create('a', false, undefined);
    const cookie = (id: string) => req({ cookie: `atlas_session=${id}` });
    expect(s.of(cookie(first.id))).toBeDefined();
    s.create('a', false, undefined); // the expired one makes room
    expect(s.of(cookie(first.id))).toBeDefined();
    s.create('a', false, undefined); // none expired: the oldest goes
    expect(s.of(cookie(first.id))).toBeUndefined();
  });

  it('cookies: HttpOnly session, readable CSRF, Secure behind https, cleared with Max-Age=0', () => {
    const s = new BoardSessions();
    const { id, session } = s.create('a', false, undefined);
    const [sess, csrf] = sessionCookies(id, session, true);
    expect(sess).toMatch(/^atlas_session=[\w-]+; HttpOnly; Path=\/; SameSite=Strict; Max-Age=\d+; Secure$/);
    expect(csrf).not.toContain('HttpOnly');
    expect(sessionCookies(id, session, false)[0]).not.toContain('Secure');
    expect(clearedCookies().every((c) => c.includes('Max-Age=0'))).toBe(true);
  });
});
