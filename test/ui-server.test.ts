// The board's server side over plain HTTP: the page and its assets (CSP, cache lifetimes, bundle
// size), sign-in into an HttpOnly SameSite=Strict cookie, the API by cookie, CSRF refusal, sign-out,
// revoked tokens, and `atlas ui`'s one-time code.
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import { listTokens, revokeToken } from '../src/server/accounts/tokens.js';
import { hostName } from '../src/server/board/board-host.js';
import { verifyTask } from '../src/server/tasks/task-verify.js';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { createToken } from './helpers/server-fixtures.js';
import { agentConfig } from './helpers/server-inprocess-fixtures.js';
import { boardServers, signIn } from './helpers/ui-fixtures.js';

checkResponses();
const boards = boardServers();

describe('the board page and its assets', () => {
  it('serves the shell with a strict CSP and no inline script; hashed assets cached a year; total JS at most 100 KB gzipped', async () => {
    const { url, uiDir } = await boards.start(tempDir());
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/https?:\/\//);
    const m = boards.manifest();
    expect(m.js).toMatch(/^app-[A-Z0-9]+\.js$/);
    const js = await fetch(`${url}/ui/${m.js}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect((await fetch(`${url}/ui/${m.css}`)).headers.get('content-type')).toMatch(/text\/css/);
    const gz = readdirSync(uiDir)
      .filter((f) => f.endsWith('.js'))
      .reduce((n, f) => n + gzipSync(readFileSync(join(uiDir, f))).length, 0);
    console.log(`board JavaScript: ${(gz / 1024).toFixed(1)} KB gzipped (target <= 100 KB)`);
    expect(gz).toBeLessThanOrEqual(100 * 1024);
    // Only the files the build listed.
    expect((await fetch(`${url}/ui/manifest.json`)).status).toBe(404);
    expect((await fetch(`${url}/ui/..%2Fmanifest.json`)).status).toBe(404);
  });
});

describe('the board without its files', () => {
  it('answers HEAD like GET without a body, and 404 with what to do when the bundle is missing', async () => {
    const { url } = await boards.start(tempDir());
    // HEAD through node:http (the OpenAPI check of fetch covers the documented methods only).
    const head = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(`${url}${path}`, { method: 'HEAD' }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
    expect(await head('/')).toEqual({ status: 200, body: '' });
    expect(await head(`/ui/${boards.manifest().js}`)).toEqual({ status: 200, body: '' });
    const bare = await boards.start(tempDir(), { uiDir: tempDir('atlas-no-ui-') });
    const missing = await fetch(`${bare.url}/`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.message).toContain('scripts/build.mjs');
  });
});

describe('sign-in by cookie', () => {
  it('turns a token into an HttpOnly SameSite=Strict cookie; the API answers by cookie; changes need the CSRF header', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const { url } = await boards.start(home);
    expect((await signIn(url, 'atlas_not-a-token')).status).toBe(401);
    const s = await signIn(url, token);
    expect(s.status).toBe(200);
    expect(s.json).toMatchObject({ account: 'alice', read_only: false });
    const session = s.setCookie.find((c) => c.startsWith('atlas_session='))!;
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/SameSite=Strict/);
    expect(session).not.toContain(token);
    expect(s.setCookie.find((c) => c.startsWith('atlas_csrf='))).not.toMatch(/HttpOnly/);

    const me = await fetch(`${url}/session`, { headers: { cookie: s.cookie } });
    expect(await me.json()).toMatchObject({ account: 'alice', csrf_token: s.csrf });
    expect((await fetch(`${url}/tasks`, { headers: { cookie: s.cookie } })).status).toBe(200);
    expect((await fetch(`${url}/tasks`)).status).toBe(401);
    expect((await fetch(`${url}/session`)).status).toBe(401);

    // A cross-site form or fetch cannot read the CSRF cookie: without the header, refused.
    const noCsrf = await fetch(`${url}/tasks/task-1/approve`, {
      method: 'POST',
      headers: { cookie: s.cookie, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(noCsrf.status).toBe(403);
    expect(((await noCsrf.json()) as any).error.code).toBe('csrf_refused');
    const wrong = await fetch(`${url}/tasks/task-1/approve`, {
      method: 'POST',
      headers: { cookie: s.cookie, 'x-csrf-token': 'guess', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(wrong.status).toBe(403);
    // With it, the request reaches the route (no such task here).
    const withCsrf = await fetch(`${url}/tasks/task-1/approve`, {
      method: 'POST',
      headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(withCsrf.status).toBe(404);
    expect((await fetch(`${url}/session`, { method: 'DELETE', headers: { cookie: s.cookie } })).status).toBe(403);
    const out = await fetch(`${url}/session`, { method: 'DELETE', headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } });
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie().join()).toContain('Max-Age=0');
    expect((await fetch(`${url}/tasks`, { headers: { cookie: s.cookie } })).status).toBe(401);
    // Signing out with no live session (no cookie, or the one just ended) is 401, not a 200 that
    // reads as a sign-out; the stale cookies are still cleared (issue 37).
    const none = await fetch(`${url}/session`, { method: 'DELETE' });
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error.code).toBe('unauthorized');
    const stale = await fetch(`${url}/session`, { method: 'DELETE', headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } });
    expect(stale.status).toBe(401);
    expect(stale.headers.getSetCookie().join()).toContain('Max-Age=0');
  });

  it('a session dies with its token; a read-only token makes a read-only session; bad bodies are clear errors', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const { url } = await boards.start(home);
    const s = await signIn(url, token);
    await revokeToken(home, (await listTokens(home))[0]!.id);
    expect((await fetch(`${url}/tasks`, { headers: { cookie: s.cookie } })).status).toBe(401);
    expect((await fetch(`${url}/session`, { headers: { cookie: s.cookie } })).status).toBe(401);
    const missing = await fetch(`${url}/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(((await missing.json()) as any).error).toMatchObject({ code: 'invalid_field', field: 'token' });
    expect((await fetch(`${url}/session`, { method: 'PUT' })).status).toBe(405);
    expect((await fetch(`${url}/tasks`, { headers: { cookie: 'atlas_session=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' } })).status).toBe(401);
  });

  it('`atlas ui` sign-in: the one-time code of the link becomes the cookie once, never twice', async () => {
    const home = tempDir();
    const { url } = await boards.start(home, { localLogin: { account: 'local', code: 'c0de-one-time-0123456789' } });
    expect((await fetch(`${url}/ui/login?code=wrong`, { redirect: 'manual' })).status).toBe(401);
    const ok = await fetch(`${url}/ui/login?code=c0de-one-time-0123456789`, { redirect: 'manual' });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/');
    const cookie = ok.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    expect(await (await fetch(`${url}/session`, { headers: { cookie } })).json()).toMatchObject({ account: 'local' });
    const used = await fetch(`${url}/ui/login?code=c0de-one-time-0123456789`, { redirect: 'manual' });
    expect(used.status).toBe(401);
    // A person followed the link: a page that says what to do, under the board's CSP.
    expect(used.headers.get('content-type')).toContain('text/html');
    expect(used.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await used.text()).toContain('restart it for a new link');
    // The board's page tells its script it belongs to `atlas ui` (no token form).
    expect(await (await fetch(`${url}/`)).text()).toContain('<meta name="atlas-board" content="local">');
  });

  it('answers only to a loopback Host when it listens on loopback (DNS rebinding)', async () => {
    const home = tempDir();
    const alice = createToken(home, 'alice');
    const { url } = await boards.start(home, { config: agentConfig((c) => (c.server.allowed_hosts = ['atlas.example.com'])) });
    const port = new URL(url).port;
    // The name a proxy in front forwards, when the operator lists it.
    expect((await rawGet(port, '/health', { host: 'ATLAS.example.com:443' })).status).toBe(200);
    // What a page of evil.example sends once its name resolves to 127.0.0.1: refused before any route.
    const rebound = await rawGet(port, '/tasks', { host: `evil.example:${port}`, authorization: `Bearer ${alice}` });
    expect(rebound.status).toBe(421);
    expect(rebound.body).toContain('host_refused');
    expect((await rawGet(port, '/', { host: `evil.example:${port}` })).status).toBe(421);
    expect((await rawGet(port, '/health', { host: 'rebind.127.0.0.1.nip.io' })).status).toBe(421);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', '[::1]:1'])
      expect((await rawGet(port, '/health', { host })).status, host).toBe(200);
    expect(hostName('[::1]:80')).toBe('[::1]');
    expect(hostName('a:b:c')).toBe('');
  });
});

describe('receipt verification for the board', () => {
  it('says so when this server has no public key to verify with', async () => {
    const saved = process.env['ATLAS_XPUB'];
    delete process.env['ATLAS_XPUB'];
    try {
      expect(await verifyTask(tempDir(), defaultConfig(), tempDir())).toEqual({
        ok: false,
        key_fingerprint: null,
        problems: [expect.stringContaining('no public key')],
        receipts: [],
        strict: null,
      });
    } finally {
      if (saved !== undefined) process.env['ATLAS_XPUB'] = saved;
    }
  });
});

/** A GET with exactly these headers (fetch will not send another Host). */
function rawGet(port: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(port), path, headers, setHost: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
