// `atlas serve`: node:http (no framework: start-up is a feature), bearer tokens per account, the
// routes, a JSON-lines access log, /health, /ready, /metrics and /openapi.json, limits on slow and
// greedy clients, graceful stop on SIGTERM and detection of work whose server died.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { LifecycleBus } from '../lifecycle/types.js';
import { parseStoreAddress } from '../sync/stores/open-store.js';
import { serverDir, TokenVerifier } from './accounts/tokens.js';
import { openApiDocument } from './api/openapi.js';
import { buildRoutes } from './api/routes.js';
import { Board, findUiDir } from './board/board.js';
import { checkHost } from './board/board-host.js';
import { LocalTaskWatcher } from './board/local-watch.js';
import { LeaseSweep } from './cluster/lease-sweep.js';
import { LazyState } from './cluster/server-state.js';
import { Conversations } from './conversations/conversations.js';
import { serverLifecycle } from './conversations/lifecycle-adapter.js';
import { pacedWaiting } from './conversations/pace.js';
import { holdSandbox } from './conversations/turn-executor.js';
import { Admission, admissionLimits, PUBLIC_PATHS, tooManyConnections } from './http/admission.js';
import type { LogFn, ServerContext } from './http/context.js';
import { StreamLimiter } from './http/context.js';
import { applyCors } from './http/cors.js';
import type { Phase } from './http/health.js';
import { checkDatabase, checkState, checkStore, ReadinessProbe } from './http/health.js';
import { HttpError, requestUrl, sendError, sendJson, setBodyTimeout } from './http/http.js';
import type { ServerMetrics } from './http/metrics.js';
import { RateLimiter } from './http/rate-limit.js';
import { makeRedactor } from './http/redact.js';
import { WorkLimiter } from './http/work-limit.js';
import { AccountEvents } from './state/account-events.js';
import { ObservedEventLogs } from './state/observed-logs.js';
import { isStateUnavailable } from './state/unavailable.js';
import { serverTasksRanHere, Tasks } from './tasks/tasks.js';

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
  lifecycle?: (beforePublish?: () => Promise<void>) => LifecycleBus;
  /** The web board's bundle (default: dist/ui, see board.ts); `atlas ui`'s one-time sign-in code. */
  uiDir?: string | undefined;
  localLogin?: { account: string; code: string } | undefined;
  /** `atlas ui`: the account that gets, live, the tasks other processes of this machine run (local-watch.ts). */
  localTasks?: string | undefined;
}

interface RequestLog {
  account: string;
  /** The token's id (never the token). */
  token: string;
  route: string;
  ttfb: number | undefined;
  code: string | undefined;
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

/**
 * Fails fast (seed 002 F6): without --local, conversation turns run in the OS sandbox, so the
 * sandbox must work on this machine before the server listens.
 */
export async function sandboxReadiness(
  local: boolean,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ ready: boolean; mode: 'local' | 'sandbox'; detail: string; hint?: string }> {
  if (local) return { ready: true, mode: 'local', detail: 'steps run UNSANDBOXED on this machine (--local)' };
  const { checkReadiness, installHint } = await import('../exec/readiness.js');
  const r = await checkReadiness(env);
  if (r.ready) return { ready: true, mode: 'sandbox', detail: 'conversation turns run in the OS sandbox' };
  const missing = r.tools.filter((t) => !t.path);
  const what = [...missing.map((t) => `${t.name} (${t.apt}) is not installed`), ...r.problems];
  return {
    ready: false,
    mode: 'sandbox',
    detail: `this machine cannot run the sandbox: ${what.join('; ')}`,
    ...(missing.length > 0 ? { hint: installHint(missing) } : {}),
  };
}

async function holdSandboxOrFail(config: Config): Promise<() => Promise<void>> {
  try {
    return await holdSandbox(config);
  } catch (error) {
    throw new AtlasError(
      `atlas serve runs steps sandboxed, and the sandbox's network proxies could not start: ${(error as Error).message}; nothing was started`,
      {
        exitCode: EXIT.failure,
        hint: 'check with `atlas doctor`, or pass --local to run agents and commands unsandboxed on this machine (only for trusted users)',
      },
    );
  }
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const write = options.write ?? ((line: string) => process.stdout.write(line));
  const warn = options.warn ?? ((text: string) => process.stderr.write(`atlas: warning: ${text}\n`));
  const log: LogFn = (entry) => {
    if (entry['msg'] === 'turn finished' && typeof entry['duration_ms'] === 'number') metrics?.turnEnded(entry['duration_ms']);
    // No credential in a URL reaches the log, whatever layer wrote the message.
    write(`${JSON.stringify({ time: new Date().toISOString(), ...entry }).replace(/(\w+:\/\/)[^/\s"@]+@/g, '$1')}\n`);
  };
  // Filled in below; the log and the event logs report to it as turns and task commands end.
  let metrics: ServerMetrics | undefined;
  // A store address that cannot be a store stops the start-up (exit 2), not each turn's push.
  if (options.config.sync.store) parseStoreAddress(options.config.sync.store, options.home);
  const sandbox = await sandboxReadiness(options.local);
  if (!sandbox.ready) {
    throw new AtlasError(`atlas serve runs steps sandboxed, and ${sandbox.detail}; nothing was started`, {
      exitCode: EXIT.failure,
      hint: `${sandbox.hint ? `${sandbox.hint}; ` : ''}check with \`atlas doctor\`, or pass --local to run agents and commands unsandboxed on this machine (only for trusted users)`,
    });
  }
  // Started now, so a sandbox that cannot run fails the start-up, not the first turn.
  const releaseSandbox = options.local ? undefined : await holdSandboxOrFail(options.config);
  if (options.local)
    warn("--local: agents and commands run UNSANDBOXED on this machine, with the server's permissions. Serve only people you trust.");
  if (!isLoopback(options.host)) {
    warn(
      `listening on ${options.host}, not loopback: put a TLS proxy in front (bearer tokens and prompts would otherwise cross the network in clear text)`,
    );
  }
  const serverConfig = options.config.server;
  const state = new LazyState(options.home, options.config.server.database, options.config.server.messages);
  const logError = (error: Error) => log({ level: 'error', msg: 'event not stored', error: redact(error.message) });
  const accountEvents = new AccountEvents(() => state.get(), logError);
  const ctx: ServerContext = {
    home: options.home,
    config: options.config,
    version: options.version,
    lifecycle: options.lifecycle ?? serverLifecycle(options.home, options.config, (e) => log(e)),
    logs: new ObservedEventLogs(
      () => state.get(),
      logError,
      (kind, key, e) => {
        metrics?.observeEvent(kind, e);
        try {
          accountEvents.copy(kind, key, e);
        } catch (error) {
          // The account's stream misses this one; the conversation's or task's own log has it.
          log({ level: 'error', msg: 'account event not copied', kind, error: redact((error as Error).message) });
        }
      },
    ),
    state: () => state.get(),
    log,
    streams: new StreamLimiter(serverConfig.max_streams_per_account),
    work: new WorkLimiter({
      maxRunning: serverConfig.max_running_per_account,
      maxQueued: serverConfig.max_queued_per_account,
      queueTimeoutMs: serverConfig.queue_timeout,
    }),
    atlasCommand: options.atlasCommand,
    local: options.local,
    stopping: undefined,
  };
  const verifier = new TokenVerifier(ctx.state);
  const board = new Board(verifier, options.uiDir ?? findUiDir(), options.localLogin);
  const conversations = new Conversations(ctx);
  const tasks = new Tasks(ctx);
  const router = buildRoutes(ctx, conversations, tasks, accountEvents);
  const started = Date.now();
  let phase: Phase = 'starting';
  const rate = new RateLimiter(serverConfig.requests_per_second);
  const redact = makeRedactor(options.home, options.config);
  const readiness = new ReadinessProbe({
    sandbox: async () => ({
      ok: sandbox.ready && (options.local || releaseSandbox !== undefined),
      detail: sandbox.mode === 'local' ? 'local (unsandboxed)' : 'sandbox proxies running',
    }),
    store: () => checkStore(options.config, options.home),
    state: () => checkState(serverDir(options.home)),
    database: () => checkDatabase(ctx.state, 'database'),
    ...(serverConfig.messages ? { messages: () => checkDatabase(ctx.state, 'messages') } : {}),
  });
  // How long the event loop was held up (sync file writes, spawns): what every stream waits on.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;

  /** Routes anyone may call (GET and HEAD; other methods 405): liveness, readiness, metrics, the API's description. */
  const publicRoute = async (pathname: string, res: ServerResponse): Promise<string | undefined> => {
    switch (pathname) {
      case '/health':
        // Liveness: the process answers. What it depends on is /ready's business.
        sendJson(res, phase === 'stopping' ? 503 : 200, {
          status: phase === 'stopping' ? 'stopping' : 'ok',
          version: options.version,
          uptime_s: Math.round((Date.now() - started) / 1000),
        });
        return pathname;
      case '/ready': {
        const r = await readiness.read(phase);
        sendJson(
          res,
          r.status === 'ready' ? 200 : 503,
          {
            ...r,
            version: options.version,
            sandbox: { ready: sandbox.ready, mode: sandbox.mode },
            running: { conversations: conversations.runningCount, tasks: tasks.runningCount, streams: ctx.streams.total() },
            event_loop_delay_ms: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) },
          },
          r.status === 'ready' ? {} : { 'retry-after': '5' },
        );
        return pathname;
      }
      case '/metrics': {
        if (!metrics) throw new HttpError(503, 'starting', 'metrics are not loaded yet', { retryAfter: 1 });
        const m = await metrics.text();
        res.writeHead(200, { 'content-type': m.contentType, 'cache-control': 'no-store' });
        res.end(m.body);
        return pathname;
      }
      case '/openapi.json':
        sendJson(res, 200, openApiDocument(options.version), { 'cache-control': 'public, max-age=300' });
        return pathname;
      default:
        return undefined;
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, requestId: string, info: RequestLog, t0: number) => {
    checkHost(req, isLoopback(options.host), serverConfig.allowed_hosts);
    if (applyCors(req, res, serverConfig.cors_origins)) {
      info.route = 'OPTIONS';
      return;
    }
    const url = requestUrl(req.url);
    if (req.method === 'GET' || req.method === 'HEAD') {
      const route = await publicRoute(url.pathname, res);
      if (route) {
        info.route = route;
        return;
      }
    } else if (PUBLIC_PATHS.has(url.pathname)) {
      throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${url.pathname}; use GET, HEAD`, {
        allow: 'GET, HEAD',
      });
    }
    const boardRoute = await board.handle(req, res, url);
    if (boardRoute) {
      info.route = boardRoute;
      return;
    }
    const header = req.headers['authorization'] ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    let verified = m ? await verifier.verify(m[1]!) : undefined;
    // The board's cookie (docs/ui.md): only without a bearer header, and a change needs the CSRF header.
    const cookie = m ? undefined : board.sessions.of(req);
    if (cookie && (await board.live(cookie.session))) {
      if (req.method !== 'GET' && req.method !== 'HEAD' && !board.sessions.csrfOk(req, cookie.session)) {
        throw new HttpError(
          403,
          'csrf_refused',
          'a request signed in by cookie that changes something needs the x-csrf-token header (GET /session gives it)',
        );
      }
      verified = { ok: true, id: 'session', account: cookie.session.account, readOnly: cookie.session.readOnly };
    }
    if (!verified?.ok) {
      throw new HttpError(
        401,
        verified ? (verified.reason === 'expired' ? 'token_expired' : 'unauthorized') : 'unauthorized',
        !verified
          ? 'send Authorization: Bearer <token>'
          : verified.reason === 'expired'
            ? 'the bearer token has expired: ask for a new one'
            : 'the bearer token is not valid (revoked, or never issued)',
      );
    }
    const account = verified.account;
    admission.authenticated(req.socket);
    info.account = account;
    info.token = verified.id;
    rate.take(account);
    const match = router.match(req.method ?? 'GET', url.pathname);
    info.route = `${match.route.method} ${match.route.pattern}`;
    if (verified.readOnly && match.route.method !== 'GET')
      throw new HttpError(403, 'read_only_token', `this token may only read; ${match.route.method} needs a token made without --read-only`);
    setBodyTimeout(req, serverConfig.body_timeout);
    await match.route.handler({
      req,
      res,
      url,
      account,
      params: match.params,
      requestId,
      started: () => (info.ttfb = performance.now() - t0),
    });
  };

  const admission = new Admission(admissionLimits(serverConfig.max_connections));
  const server = createServer({ connectionsCheckingInterval: Math.min(1_000, serverConfig.headers_timeout) }, (req, res) => {
    const requestId =
      req.headers['x-request-id'] && /^[\w.-]{1,64}$/.test(String(req.headers['x-request-id']))
        ? String(req.headers['x-request-id'])
        : randomBytes(8).toString('hex');
    const t0 = performance.now();
    const info: RequestLog = { account: '', token: '', route: '', ttfb: undefined, code: undefined };
    res.setHeader('x-request-id', requestId);
    const admitted = admission.begin(req.socket, (req.url ?? '/').split('?')[0]!);
    res.on('close', () => {
      admission.end(req.socket);
      const duration = performance.now() - t0;
      // Never the token, the prompt or the query string: the route's pattern, the token's id.
      log({
        msg: 'request',
        request_id: requestId,
        account: info.account || null,
        token_id: info.token || null,
        method: req.method,
        route: info.route || null,
        status: res.statusCode,
        ...(info.code ? { code: info.code } : {}),
        duration_ms: Math.round(duration * 10) / 10,
        ...(info.ttfb !== undefined ? { ttfb_ms: Math.round(info.ttfb * 10) / 10 } : {}),
      });
      metrics?.request(
        info.route,
        res.statusCode,
        info.ttfb ?? (info.route.includes('/events') || info.route.includes('/sandbox/') ? undefined : duration),
        info.code,
      );
    });
    if (!admitted) return sendError(res, tooManyConnections(res, info), requestId);
    handle(req, res, requestId, info, t0).catch((failure: unknown) => {
      // The database or the message store down, or past its deadline: the documented 503.
      const error =
        !(failure instanceof HttpError) && isStateUnavailable(failure)
          ? new HttpError(503, 'state_unavailable', 'the server state does not answer (its database may be down): retry shortly', {
              retry_after_s: 1,
            })
          : failure;
      if (error instanceof HttpError) {
        info.code = error.code;
        // Hints are for whoever runs the server: its log has them, the client does not.
        if (typeof error.extra['hint'] === 'string')
          log({ msg: 'error hint', request_id: requestId, code: error.code, hint: error.extra['hint'] });
        return sendError(res, error, requestId, redact);
      }
      info.code = 'internal_error';
      log({ level: 'error', msg: 'request failed', request_id: requestId, error: redact((error as Error).message) });
      sendError(
        res,
        new HttpError(500, 'internal_error', 'the server could not complete the request; its log has the details under this request id'),
        requestId,
      );
    });
  });
  // Slow or hostile clients (issue 19, defect 6): headers and whole requests have deadlines (408,
  // then the socket is closed), checked every second; connections past the cap are closed at once.
  server.headersTimeout = serverConfig.headers_timeout;
  server.requestTimeout = serverConfig.request_timeout;
  server.keepAliveTimeout = 5_000;
  // Which connections are kept, per address and for the probes: src/server/http/admission.ts.
  server.on('connection', (socket: Socket) => admission.admit(socket));
  server.maxRequestsPerSocket = 0;

  await new Promise<void>((resolve, reject) => {
    server.once(
      'error',
      (error: NodeJS.ErrnoException) =>
        void Promise.resolve(releaseSandbox?.()).finally(() =>
          reject(
            new AtlasError(`cannot listen on ${options.host}:${options.port}: ${error.code ?? error.message}`, {
              exitCode: EXIT.failure,
              hint: error.code === 'EADDRINUSE' ? 'another process uses that port: pass --port' : 'check --host and --port',
            }),
          ),
        ),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;

  // Tasks whose server died: recovered before the first request. Their index is in the state, opened
  // before the server listens only when this machine has run tasks for a server at all.
  const reportCutOff = (kind: 'conversation' | 'task', ids: string[]) => {
    if (ids.length === 0) return;
    log({ msg: 'interrupted work found', [kind === 'conversation' ? 'conversations' : 'tasks']: ids, recovering: options.recover });
    if (!options.recover) warn(`${ids.length} ${kind}(s) were cut off by a stopped server: POST .../recover, or restart with --recover`);
  };
  const crashed = serverTasksRanHere(options.home)
    ? await tasks.findCrashed().catch((error: Error) => {
        warn(`could not look for cut-off tasks (the server state does not answer): ${error.message}`);
        return [];
      })
    : [];
  reportCutOff(
    'task',
    crashed.map((t) => t.task_id),
  );
  if (options.recover) for (const t of crashed) tasks.recoverInBackground(t);
  const localWatch = options.localTasks ? new LocalTaskWatcher(ctx, tasks, options.localTasks) : undefined;
  localWatch?.start();
  phase = 'ready';
  // The state (and its driver) opens once the server listens: not part of the start-up, and a
  // request that comes meanwhile waits for the same opening. Not awaited: the caller installs its
  // signal handlers at once.
  void verifier.count().then(
    (n) =>
      n === 0
        ? warn('no API tokens yet: every request will get 401. Create one with `atlas serve token create --account NAME`')
        : undefined,
    (error: Error) => warn(`the server state cannot be opened yet (requests get 503 until it can): ${error.message}`),
  );
  log({
    msg: 'listening',
    url,
    port,
    version: options.version,
    sandbox: sandbox.mode,
    sandbox_ready: sandbox.ready,
    store: !options.config.sync.store ? 'none' : /^s3:\/\//.test(options.config.sync.store) ? 's3' : 'folder',
  });
  // Conversations whose server died: marked interrupted so they can be recovered (now, with
  // --recover). Looked for once the server listens: their records are in the state, which is not
  // part of the start-up.
  const leaseSweep = new LeaseSweep(ctx, conversations);
  void (async () => {
    const interrupted = await conversations.findInterrupted().catch((error: Error) => {
      warn(`could not look for cut-off conversations (the server state does not answer): ${error.message}`);
      return [];
    });
    reportCutOff(
      'conversation',
      interrupted.map((c) => `${c.account}/${c.id}`),
    );
    if (options.recover) {
      for (const c of interrupted) {
        conversations
          .recover(c.account, c.id)
          .catch((error: Error) => log({ level: 'error', msg: 'recover failed', conversation_id: c.id, error: error.message }));
      }
    }
    log({ msg: 'cut-off work checked', conversations: interrupted.length, tasks: crashed.length });
    // Turns cut off from now on (their server died: its lease expired) are marked by the sweep or
    // a request, and recovered at once with server.auto_recover.
    conversations.onInterrupted = (c) => leaseSweep.autoRecover(c);
    leaseSweep.start();
  })();
  // prom-client is loaded in the background once the server listens: its 20 ms are not in the
  // start-up (/metrics answers 503 until then), and the caller installs its signal handlers at once
  // (a SIGTERM while it loads must stop the server gracefully, not kill it).
  void import('./http/metrics.js').then(({ ServerMetrics }) => {
    metrics = new ServerMetrics({
      conversations: () => conversations.runningCount,
      tasks: () => tasks.runningCount,
      streams: () => ctx.streams.total(),
      startsWaiting: pacedWaiting,
      requestsQueued: () => ctx.work.queued(),
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => {
    stopping ??= (async () => {
      ctx.stopping = reason;
      phase = 'stopping';
      localWatch?.stop();
      const swept = leaseSweep.stop();
      log({
        msg: 'stopping',
        reason,
        grace_ms: options.config.server.grace_period,
        conversations: conversations.runningCount,
        tasks: tasks.runningCount,
      });
      server.close();
      server.closeIdleConnections();
      const settled = Promise.all([conversations.settled(), tasks.settled()]);
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace'>((r) => (timer = setTimeout(() => r('grace'), options.config.server.grace_period)));
      const first = await Promise.race([settled.then(() => 'done' as const), graceOver]);
      if (timer) clearTimeout(timer);
      if (first === 'grace') {
        log({
          msg: 'grace period over: checkpointing and interrupting the rest',
          conversations: conversations.runningCount,
          tasks: tasks.runningCount,
        });
        conversations.stopAll(`server stopping (${reason})`);
        await tasks.stopAll();
        await Promise.race([settled, new Promise((r) => setTimeout(r, 15_000).unref())]);
      }
      // Turn streams end themselves once their last event is written: wait for them (bounded, since
      // a busy machine may take a while to flush), then close what is left, such as event watchers.
      const flushBy = Date.now() + 2_000;
      do await new Promise((r) => setTimeout(r, 25));
      while (ctx.streams.total() > 0 && Date.now() < flushBy);
      server.closeAllConnections();
      loopDelay.disable();
      await releaseSandbox?.();
      // The last events (usage, the account's copies) are stored before the state closes.
      await Promise.race([Promise.all([ctx.logs.settled(), accountEvents.settled()]), new Promise((r) => setTimeout(r, 5_000).unref())]);
      // A sweep pass under way ends before the state closes (bounded: the database may not answer).
      await Promise.race([swept, new Promise((r) => setTimeout(r, 5_000).unref())]);
      await state.close();
      log({ msg: 'stopped', reason });
    })();
    return stopping;
  };
  return { port, url, stop };
}
