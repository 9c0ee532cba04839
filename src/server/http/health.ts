// GET /health (liveness: the process answers) and GET /ready (can it take work: the sandbox, the
// store, the server's own state folder, its database and message store reachable; 503 while starting or stopping or when one is down,
// saying which). Checks run at most once every few seconds and never block the event loop.
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Config } from '../../config/schema.js';
import { parseStoreAddress } from '../../sync/stores/open-store.js';
import type { ServerState } from '../state/types.js';

export interface CheckResult {
  ok: boolean;
  /** What was checked, without server paths or endpoints (the log has those). */
  detail: string;
}

export type Phase = 'starting' | 'ready' | 'stopping';

const CACHE_MS = 2_000;
const CHECK_TIMEOUT_MS = 3_000;

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms)),
  );
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

async function writable(path: string): Promise<void> {
  await access(path, constants.W_OK | constants.X_OK);
}

/** The store: a folder that exists and is writable (or can be made in a writable parent), or an S3 listing. */
export async function checkStore(config: Config, home: string): Promise<CheckResult> {
  if (!config.sync.store) return { ok: true, detail: 'no store configured: workspaces live on this server only' };
  let address: ReturnType<typeof parseStoreAddress>;
  try {
    address = parseStoreAddress(config.sync.store, home);
  } catch {
    return { ok: false, detail: 'sync.store is not a valid store address' };
  }
  try {
    if (address.kind === 'dir') {
      await writable(address.path).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
        await writable(dirname(address.path));
      });
      return { ok: true, detail: 'store folder writable' };
    }
    const { openStore } = await import('../../sync/stores/open-store.js');
    const store = await openStore(config, home);
    await withTimeout(store.checkAccess(), CHECK_TIMEOUT_MS, 'the store');
    return { ok: true, detail: 'S3 store answers' };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, detail: `store unreachable${code ? ` (${code})` : ''}` };
  }
}

/** The server's state (tokens, conversations, events): its folder must be writable. */
export async function checkState(stateDir: string): Promise<CheckResult> {
  try {
    // Made with the first token or conversation: until then its parent must be writable.
    await withTimeout(
      writable(stateDir).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
        await writable(dirname(stateDir));
      }),
      CHECK_TIMEOUT_MS,
      'the state folder',
    );
    return { ok: true, detail: 'state writable' };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, detail: `state unreachable${code ? ` (${code})` : ''}` };
  }
}

/**
 * The state's database (PostgreSQL, or the SQLite file) and, with server.messages, DynamoDB: one
 * round trip each, within the check's deadline (issue 37: /ready said ready while PostgreSQL was down).
 */
export async function checkDatabase(state: () => Promise<ServerState>, part: 'database' | 'messages'): Promise<CheckResult> {
  try {
    await withTimeout(
      state().then((s) => (part === 'database' ? s.pingDatabase() : s.pingMessages())),
      CHECK_TIMEOUT_MS,
      `the ${part}`,
    );
    return { ok: true, detail: part === 'database' ? 'database answers' : 'message store answers' };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, detail: `${part === 'database' ? 'database' : 'message store'} unreachable${code ? ` (${code})` : ''}` };
  }
}

export interface Readiness {
  status: 'ready' | 'not_ready' | Phase;
  checks: Record<string, CheckResult>;
}

/** Runs the checks (cached a moment, so a load balancer polling it costs nothing). */
export class ReadinessProbe {
  private cached: { at: number; checks: Record<string, CheckResult> } | undefined;
  private pending: Promise<Record<string, CheckResult>> | undefined;

  constructor(private readonly checks: Record<string, () => Promise<CheckResult>>) {}

  private async run(): Promise<Record<string, CheckResult>> {
    const names = Object.keys(this.checks);
    const results = await Promise.all(names.map((n) => this.checks[n]!().catch((error: Error) => ({ ok: false, detail: error.message }))));
    return Object.fromEntries(names.map((n, i) => [n, results[i]!]));
  }

  async read(phase: Phase): Promise<Readiness> {
    const now = performance.now();
    if (!this.cached || now - this.cached.at > CACHE_MS) {
      this.pending ??= this.run().finally(() => (this.pending = undefined));
      this.cached = { at: now, checks: await this.pending };
    }
    const checks = this.cached.checks;
    const down = Object.values(checks).some((c) => !c.ok);
    return { status: phase !== 'ready' ? phase : down ? 'not_ready' : 'ready', checks };
  }
}
