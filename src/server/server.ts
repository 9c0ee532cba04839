// `atlas serve`: node:http (no framework: start-up is a feature), bearer tokens per account, the
// routes, a JSON-lines access log, GET /health, graceful stop on SIGTERM and detection of work
// whose server died.
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { LifecycleBus } from '../lifecycle/types.js';
import type { LogFn, ServerContext } from './context.js';
import { StreamLimiter } from './context.js';
import { Conversations } from './conversations.js';
import { EventLogs } from './event-log.js';
import { HttpError, sendError, sendJson } from './http.js';
import { serverLifecycle } from './lifecycle-adapter.js';
import { buildRoutes } from './routes.js';
import { holdSandbox } from './turn-executor.js';
import { Tasks } from './tasks.js';
import { TokenVerifier } from './tokens.js';

export interface ServeOptions {
  home: string;
  config: Config;
  host: string;
  port: number;
  local: boolean;
  recover: boolean;
  version: string;
  atlasCommand: { command: string; args: string[] };
  /** Where JSON log lines go (default: stdout). */
  write?: (line: string) => void;
  /** Loud notes for the person starting it (default: stderr). */
  warn?: (text: string) => void;
  /** Lifecycle buses (default: the configuration's, see lifecycle-adapter.ts). */
  lifecycle?: () => LifecycleBus;
}

export interface RunningServer {
  port: number;
  url: string;
  /** Graceful stop: refuse new work, let streams finish within the grace period, then interrupt. */
  stop(reason: string): Promise<void>;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function storeHealth(store: string): { configured: boolean; reachable: boolean | null; detail: string } {
  if (!store) return { configured: false, reachable: null, detail: 'sync.store is not set: workspaces live on this server only' };
  if (/^s3:\/\//.test(store)) return { configured: true, reachable: null, detail: `${store} (checked when a conversation syncs)` };
  try {
    accessSync(store, constants.W_OK);
    return { configured: true, reachable: true, detail: store };
  } catch (error) {
    return { configured: true, reachable: false, detail: `${store}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}` };
  }
}

/**
 * Fails fast (seed 002 F6): without --local, conversation turns run in the OS sandbox, so the
 * sandbox must work on this machine before the server listens.
 */
export async function sandboxReadiness(local: boolean, env: NodeJS.ProcessEnv = process.env): Promise<{ ready: boolean; mode: 'local' | 'sandbox'; detail: string; hint?: string }> {
  if (local) return { ready: true, mode: 'local', detail: 'steps run UNSANDBOXED on this machine (--local)' };
  const { checkReadiness, installHint } = await import('../exec/readiness.js');
  const r = await checkReadiness(env);
  if (r.ready) return { ready: true, mode: 'sandbox', detail: 'conversation turns run in the OS sandbox' };
  const missing = r.tools.filter((t) => !t.path);
  const what = [...missing.map((t) => `${t.name} (${t.apt}) is not installed`), ...r.problems];
  return { ready: false, mode: 'sandbox', detail: `this machine cannot run the sandbox: ${what.join('; ')}`, ...(missing.length > 0 ? { hint: installHint(missing) } : {}) };
}

async function holdSandboxOrFail(config: Config): Promise<() => Promise<void>> {
  try {
    return await holdSandbox(config);
  } catch (error) {
    throw new AtlasError(`atlas serve runs steps sandboxed, and the sandbox's network proxies could not start: ${(error as Error).message}; nothing was started`, {
      exitCode: EXIT.failure,
      hint: 'check with `atlas doctor`, or pass --local to run agents and commands unsandboxed on this machine (only for trusted users)',
    });
  }
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const write = options.write ?? ((line: string) => process.stdout.write(line));
  const warn = options.warn ?? ((text: string) => process.stderr.write(`atlas: warning: ${text}\n`));
  const log: LogFn = (entry) => write(`${JSON.stringify({ time: new Date().toISOString(), ...entry })}\n`);
  const sandbox = await sandboxReadiness(options.local);
  if (!sandbox.ready) {
    throw new AtlasError(`atlas serve runs steps sandboxed, and ${sandbox.detail}; nothing was started`, {
      exitCode: EXIT.failure,
      hint: `${sandbox.hint ? `${sandbox.hint}; ` : ''}check with \`atlas doctor\`, or pass --local to run agents and commands unsandboxed on this machine (only for trusted users)`,
    });
  }
  // Started now, so a sandbox that cannot run fails the start-up, not the first turn.
  const releaseSandbox = options.local ? undefined : await holdSandboxOrFail(options.config);
  if (options.local) warn('--local: agents and commands run UNSANDBOXED on this machine, with the server\'s permissions. Serve only people you trust.');
  if (!isLoopback(options.host)) {
    warn(`listening on ${options.host}, not loopback: put a TLS proxy in front (bearer tokens and prompts would otherwise cross the network in clear text)`);
  }
  const ctx: ServerContext = {
    home: options.home,
    config: options.config,
    version: options.version,
    lifecycle: options.lifecycle ?? serverLifecycle(options.home, options.config, (e) => log(e)),
    logs: new EventLogs(),
    log,
    streams: new StreamLimiter(options.config.server.max_streams_per_account),
    atlasCommand: options.atlasCommand,
    local: options.local,
    stopping: undefined,
  };
  const verifier = new TokenVerifier(options.home);
  if (verifier.count() === 0) warn('no API tokens yet: every request will get 401. Create one with `atlas serve token create --account NAME`');
  const conversations = new Conversations(ctx);
  const tasks = new Tasks(ctx);
  const router = buildRoutes(ctx, conversations, tasks);
  const started = Date.now();
  // How long the event loop was held up (sync file writes, spawns): what every stream waits on.
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();

  const health = (res: ServerResponse) => {
    const store = storeHealth(options.config.sync.store);
    const ok = sandbox.ready && store.reachable !== false && !ctx.stopping;
    sendJson(res, ok ? 200 : 503, {
      status: ctx.stopping ? 'stopping' : ok ? 'ok' : 'degraded',
      version: options.version,
      sandbox,
      store,
      running: { conversations: conversations.runningCount, tasks: tasks.runningCount, streams: ctx.streams.total() },
      event_loop_delay_ms: { p50: Math.round(loopDelay.percentile(50) / 1e4) / 100, p99: Math.round(loopDelay.percentile(99) / 1e4) / 100, max: Math.round(loopDelay.max / 1e4) / 100 },
      uptime_s: Math.round((Date.now() - started) / 1000),
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, requestId: string, info: { account: string; route: string; ttfb: number | undefined }, t0: number) => {
    const url = new URL(req.url ?? '/', 'http://atlas.invalid');
    if (url.pathname === '/health' && (req.method === 'GET' || req.method === 'HEAD')) {
      info.route = '/health';
      return health(res);
    }
    const header = req.headers['authorization'] ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const account = m ? verifier.account(m[1]!) : undefined;
    if (!account) throw new HttpError(401, 'unauthorized', m ? 'the bearer token is not valid (revoked, or never issued)' : 'send Authorization: Bearer <token> (atlas serve token create --account NAME)');
    info.account = account;
    const match = router.match(req.method ?? 'GET', url.pathname);
    info.route = `${match.route.method} ${match.route.pattern}`;
    await match.route.handler({ req, res, url, account, params: match.params, requestId, started: () => (info.ttfb = performance.now() - t0) });
  };

  const server = createServer((req, res) => {
    const requestId = req.headers['x-request-id'] && /^[\w.-]{1,64}$/.test(String(req.headers['x-request-id'])) ? String(req.headers['x-request-id']) : randomBytes(8).toString('hex');
    const t0 = performance.now();
    const info: { account: string; route: string; ttfb: number | undefined } = { account: '', route: '', ttfb: undefined };
    res.setHeader('x-request-id', requestId);
    res.on('close', () => {
      log({ msg: 'request', request_id: requestId, account: info.account || null, method: req.method, route: info.route || null, status: res.statusCode, duration_ms: Math.round((performance.now() - t0) * 10) / 10, ...(info.ttfb !== undefined ? { ttfb_ms: Math.round(info.ttfb * 10) / 10 } : {}) });
    });
    handle(req, res, requestId, info, t0).catch((error: unknown) => {
      if (error instanceof HttpError) return sendError(res, error, requestId);
      log({ level: 'error', msg: 'request failed', request_id: requestId, error: (error as Error).message });
      sendError(res, new HttpError(500, 'internal_error', 'the server could not complete the request; see its log for this request id'), requestId);
    });
  });
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      void Promise.resolve(releaseSandbox?.()).finally(() => reject(new AtlasError(`cannot listen on ${options.host}:${options.port}: ${error.code ?? error.message}`, { exitCode: EXIT.failure, hint: error.code === 'EADDRINUSE' ? 'another process uses that port: pass --port' : 'check --host and --port' }))),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;

  // Work whose server died: marked interrupted so it can be recovered (now, with --recover).
  const interrupted = conversations.findInterrupted();
  const crashed = tasks.findCrashed();
  if (interrupted.length + crashed.length > 0) {
    log({ msg: 'interrupted work found', conversations: interrupted.map((c) => `${c.account}/${c.id}`), tasks: crashed.map((t) => t.task_id), recovering: options.recover });
    if (!options.recover) warn(`${interrupted.length} conversation(s) and ${crashed.length} task(s) were cut off by a stopped server: POST .../recover, or restart with --recover`);
  }
  if (options.recover) {
    for (const c of interrupted) {
      conversations.recover(c.account, c.id).catch((error: Error) => log({ level: 'error', msg: 'recover failed', conversation_id: c.id, error: error.message }));
    }
    for (const t of crashed) tasks.recoverInBackground(t);
  }
  log({ msg: 'listening', url, port, version: options.version, sandbox: sandbox.mode, sandbox_ready: sandbox.ready, store: storeHealth(options.config.sync.store).detail, home_exists: existsSync(options.home) });

  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => {
    stopping ??= (async () => {
      ctx.stopping = reason;
      log({ msg: 'stopping', reason, grace_ms: options.config.server.grace_period, conversations: conversations.runningCount, tasks: tasks.runningCount });
      server.close();
      server.closeIdleConnections();
      const settled = Promise.all([conversations.settled(), tasks.settled()]);
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace'>((r) => (timer = setTimeout(() => r('grace'), options.config.server.grace_period)));
      const first = await Promise.race([settled.then(() => 'done' as const), graceOver]);
      if (timer) clearTimeout(timer);
      if (first === 'grace') {
        log({ msg: 'grace period over: checkpointing and interrupting the rest', conversations: conversations.runningCount, tasks: tasks.runningCount });
        conversations.stopAll(`server stopping (${reason})`);
        await tasks.stopAll();
        await Promise.race([settled, new Promise((r) => setTimeout(r, 15_000).unref())]);
      }
      // Streams have their last events; give them a moment to flush, then close what is left.
      await new Promise((r) => setTimeout(r, 50));
      server.closeAllConnections();
      loopDelay.disable();
      await releaseSandbox?.();
      log({ msg: 'stopped', reason });
    })();
    return stopping;
  };
  return { port, url, stop };
}
