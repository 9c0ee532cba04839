// The web board in tests: the bundle the build put in dist/ui (scripts/build-ui.mjs),
// in-process servers serving it (stopped after each test), and sign-in by cookie.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { startLocalBoard } from '../../src/server/local-board.js';
import type { RunningServer } from '../../src/server/server.js';
import { startServer } from '../../src/server/server.js';
import { ATLAS_BIN, REPO_ROOT } from './core-fixtures.js';
import { ensureBuilt } from './engine-fixtures.js';
import { agentConfig } from './server-inprocess-fixtures.js';

export interface BoardServer {
  url: string;
  server: RunningServer;
  uiDir: string;
}

export function boardServers() {
  const running: RunningServer[] = [];
  let uiDir = '';
  let manifest: { js: string; css: string; files: string[] } = { js: '', css: '', files: [] };
  beforeAll(() => {
    // The bundle `npm run build` made (test/global-build.ts builds it before any worker starts).
    ensureBuilt();
    uiDir = join(REPO_ROOT, 'dist', 'ui');
    manifest = JSON.parse(readFileSync(join(uiDir, 'manifest.json'), 'utf8'));
  });
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop('test over');
  });
  const start = async (
    home: string,
    options: { config?: Config; localLogin?: { account: string; code: string }; uiDir?: string; local?: boolean } = {},
  ): Promise<BoardServer> => {
    const server = await startServer({
      home,
      config: options.config ?? agentConfig(),
      host: '127.0.0.1',
      port: 0,
      local: options.local ?? true,
      recover: false,
      version: 'test',
      atlasCommand: { command: process.execPath, args: [ATLAS_BIN] },
      write: () => undefined,
      warn: () => undefined,
      uiDir: options.uiDir ?? uiDir,
      localLogin: options.localLogin,
    });
    running.push(server);
    return { url: server.url, server, uiDir: options.uiDir ?? uiDir };
  };
  /** `atlas ui`'s board on `home` (this machine's tasks, a one-time link), serving this file's bundle. */
  const startLocal = (home: string) =>
    startLocalBoard({
      home,
      config: agentConfig(),
      port: 0,
      version: 'test',
      atlasCommand: { command: process.execPath, args: [ATLAS_BIN] },
      uiDir,
      warn: () => undefined,
    });
  return { start, startLocal, manifest: () => manifest, uiDir: () => uiDir };
}

/** Signs in with a token; the cookies as a Cookie header, and the CSRF token. */
export async function signIn(
  url: string,
  token: string,
): Promise<{ status: number; cookie: string; csrf: string; setCookie: string[]; json: any }> {
  const res = await fetch(`${url}/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  const setCookie = res.headers.getSetCookie();
  const cookie = setCookie.map((c) => c.split(';')[0]).join('; ');
  const json: any = await res.json();
  return { status: res.status, cookie, csrf: json.csrf_token ?? '', setCookie, json };
}

export const CHROMIUM = process.env['ATLAS_CHROMIUM'] ?? '/usr/bin/chromium';
/** Browser tests are skipped only where there is no browser and this is not CI (CI installs chromium: .ci/run). */
export const withChromium = existsSync(CHROMIUM) || process.env['CI'] ? describe : describe.skip;

/** Debian's Chromium, launched once for the file (after building the CLI its tasks run) and closed after it. */
export function chromiumOfThisFile(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    ensureBuilt();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });
  return () => browser!;
}

/** Signs the page in through the board's form and waits for the live event stream. */
export async function signInPage(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/`);
  await page.getByLabel(/API token/).fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('.live.on').waitFor({ timeout: 15_000 });
}

/** Adds .atlas/templates/<name>.yaml to the repository and commits it. */
export function addTemplate(repo: string, name: string, yaml: string): void {
  writeFileSync(join(repo, '.atlas', 'templates', `${name}.yaml`), yaml);
  execFileSync('git', ['add', '-A'], { cwd: repo });
  execFileSync('git', ['commit', '-q', '-m', `${name} template`], { cwd: repo });
}

const AXE_SOURCE = readFileSync(join(REPO_ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/**
 * axe-core's violations on the page as it is now, in light and then dark colours, as
 * "rule: target" lines (empty when clean). Injected through the DevTools protocol, so the
 * board's CSP stays as it is.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  const out: string[] = [];
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
    const found = await page.evaluate(async () => {
      const r = await (
        window as unknown as {
          axe: {
            run: (
              ctx: Document,
              o: object,
            ) => Promise<{ violations: { id: string; nodes: { target: string[]; failureSummary?: string }[] }[] }>;
          };
        }
      ).axe.run(document, { resultTypes: ['violations'] });
      return r.violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')} ${n.failureSummary ?? ''}`.trim()));
    });
    out.push(...found.map((f) => `${colorScheme}: ${f}`));
  }
  await page.emulateMedia({ colorScheme: 'light' });
  return out;
}

/** Saved for docs/ui.md when ATLAS_UI_SCREENSHOTS=1. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env['ATLAS_UI_SCREENSHOTS'] !== '1') return;
  const dir = join(REPO_ROOT, 'docs', 'ui');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}
