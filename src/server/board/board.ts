// The web board's own routes (docs/ui.md): the HTML shell at `/`, its bundled assets under /ui/
// (hashed names, cached for a year), and sign-in: POST /session with a bearer token, GET /session
// (who am I, and the CSRF token), DELETE /session, and GET /ui/login?code= for `atlas ui`'s
// one-time link. Everything else the board shows comes through the ordinary API.
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TokenVerifier } from '../accounts/tokens.js';
import { HttpError, readJsonObject, requiredString, sendJson } from '../http/http.js';
import { BoardSessions, clearedCookies, sessionCookies } from './board-sessions.js';

/** No inline script or style, nothing from another origin, no framing. */
export const BOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const PAGE_HEADERS = {
  'content-security-policy': BOARD_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};
const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  map: 'application/json; charset=utf-8',
};

interface Manifest {
  js: string;
  css: string;
  files: string[];
}

/** dist/ui next to the bundled CLI (dist/chunks/..), or the checkout's dist/ui when run from src/. */
export function findUiDir(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const dir of [join(here, '..', 'ui'), join(here, 'ui'), join(here, '..', '..', 'dist', 'ui')]) {
    if (existsSync(join(dir, 'manifest.json'))) return dir;
  }
  return undefined;
}

function shell(m: Manifest, local: boolean): string {
  // `atlas ui` signs in by its printed link only: the page says so instead of asking for a token.
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark"><meta name="atlas-board" content="${local ? 'local' : 'server'}"><title>atlas board</title><link rel="stylesheet" href="/ui/${m.css}"><script type="module" src="/ui/${m.js}"></script></head><body><div id="app"><noscript>The atlas board needs JavaScript; the HTTP API (docs/server.md) works without it.</noscript></div></body></html>`;
}

const methodOf = (req: IncomingMessage) => req.method ?? 'GET';

export class Board {
  private manifest: Manifest | undefined;
  readonly sessions: BoardSessions;
  private readonly local: boolean;

  constructor(
    private readonly verifier: TokenVerifier,
    private readonly uiDir: string | undefined,
    local?: { account: string; code: string },
  ) {
    this.sessions = new BoardSessions(local);
    this.local = local !== undefined;
  }

  private loadManifest(): Manifest {
    if (this.manifest) return this.manifest;
    if (!this.uiDir) throw new HttpError(404, 'not_found', 'this atlas was built without the web board (run node scripts/build.mjs)');
    try {
      this.manifest = JSON.parse(readFileSync(join(this.uiDir, 'manifest.json'), 'utf8')) as Manifest;
    } catch {
      throw new HttpError(404, 'not_found', "the web board's files are missing from this installation (run node scripts/build.mjs)");
    }
    return this.manifest;
  }

  /** Answers the board's routes; undefined for every other path. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<string | undefined> {
    const method = req.method ?? 'GET';
    const get = method === 'GET' || method === 'HEAD';
    if (url.pathname === '/' && get) {
      const html = shell(this.loadManifest(), this.local);
      res.writeHead(200, {
        ...PAGE_HEADERS,
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-length': Buffer.byteLength(html),
      });
      res.end(method === 'HEAD' ? undefined : html);
      return 'GET /';
    }
    if (url.pathname === '/ui/login' && get) return this.login(req, res, url);
    if (url.pathname.startsWith('/ui/') && get) {
      const name = url.pathname.slice(4);
      const m = this.loadManifest();
      // Only the files the build listed: no path from the request reaches the file system.
      if (!m.files.includes(name)) throw new HttpError(404, 'not_found', `no board asset ${name.slice(0, 80)}`);
      const body = readFileSync(join(this.uiDir!, name));
      res.writeHead(200, {
        ...PAGE_HEADERS,
        'content-type': TYPES[name.split('.').pop()!] ?? 'application/octet-stream',
        'cache-control': 'public, max-age=31536000, immutable',
        'content-length': body.length,
      });
      res.end(method === 'HEAD' ? undefined : body);
      return 'GET /ui/{file}';
    }
    if (url.pathname === '/session') return this.session(req, res, method);
    return undefined;
  }

  private async session(req: IncomingMessage, res: ServerResponse, method: string): Promise<string> {
    const secure = req.headers['x-forwarded-proto'] === 'https';
    if (method === 'POST') {
      const token = requiredString(await readJsonObject(req, 4096), 'token', 200);
      const v = await this.verifier.verify(token.trim());
      if (!v.ok)
        throw new HttpError(
          401,
          v.reason === 'expired' ? 'token_expired' : 'unauthorized',
          v.reason === 'expired' ? 'this token has expired: ask for a new one' : 'this token is not valid (revoked, or never issued)',
        );
      const { id, session } = this.sessions.create(v.account, v.readOnly, token.trim());
      sendJson(
        res,
        200,
        { account: session.account, read_only: session.readOnly, csrf_token: session.csrf },
        { 'set-cookie': sessionCookies(id, session, secure) as unknown as string },
      );
      return 'POST /session';
    }
    const current = this.sessions.of(req);
    if (method === 'GET' || method === 'HEAD') {
      if (!current || !(await this.live(current.session)))
        throw new HttpError(401, 'unauthorized', 'not signed in: POST /session with a token');
      sendJson(res, 200, { account: current.session.account, read_only: current.session.readOnly, csrf_token: current.session.csrf });
      return 'GET /session';
    }
    if (method === 'DELETE') {
      // No live session to end: 401 as GET says (a 200 read as a sign-out), stale cookies cleared.
      if (!current) {
        res.setHeader('set-cookie', clearedCookies());
        throw new HttpError(401, 'unauthorized', 'not signed in: there is no session to sign out of (POST /session with a token signs in)');
      }
      if (!this.sessions.csrfOk(req, current.session))
        throw new HttpError(403, 'csrf_refused', `send the ${'x-csrf-token'} header with the session's CSRF token`);
      this.sessions.end(current.id);
      sendJson(res, 200, { signed_out: true }, { 'set-cookie': clearedCookies() as unknown as string });
      return 'DELETE /session';
    }
    throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on /session; use GET, POST, DELETE`, {
      allow: 'GET, POST, DELETE',
    });
  }

  private login(req: IncomingMessage, res: ServerResponse, url: URL): string {
    const code = url.searchParams.get('code') ?? '';
    const made = this.sessions.redeem(code);
    if (!made) {
      // A person followed a link: an HTML page, not the API's JSON.
      const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark"><title>Sign-in link used - atlas board</title></head><body><main><h1>This sign-in link was used already</h1><p>Each link that <code>atlas ui</code> prints signs in once. If this browser is signed in, <a href="/">open the board</a>; otherwise stop <code>atlas ui</code> (Ctrl+C) and restart it for a new link.</p></main></body></html>`;
      res.writeHead(401, {
        ...PAGE_HEADERS,
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-length': Buffer.byteLength(page),
      });
      res.end(methodOf(req) === 'HEAD' ? undefined : page);
      return 'GET /ui/login';
    }
    // The code leaves the address bar at once; the cookie carries the session from here on.
    res.writeHead(303, {
      ...PAGE_HEADERS,
      location: '/',
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      'set-cookie': sessionCookies(made.id, made.session, false),
    });
    res.end('signed in: continue to /\n');
    return 'GET /ui/login';
  }

  /** A session made from a token lasts only while the token does (revoked or expired: signed out). */
  async live(session: { token: string | undefined }): Promise<boolean> {
    return session.token === undefined || (await this.verifier.verify(session.token)).ok;
  }
}
