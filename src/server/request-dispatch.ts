// Request dispatch of `atlas serve`: each request gets its id, its access-log line and its limits,
// then goes to a public route (/health, /ready, /metrics, /openapi.json), the board, or, once its
// bearer token (or the board's cookie) is verified, the API's routes; failures become the documented errors.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { IntervalHistogram } from 'node:perf_hooks';
import type { Config } from '../config/schema.js';
import type { TokenVerifier } from './accounts/tokens.js';
import type { buildRoutes } from './api/routes.js';
import type { Board } from './board/board.js';
import { checkHost } from './board/board-host.js';
import type { Conversations } from './conversations/conversations.js';
import type { Admission } from './http/admission.js';
import { PUBLIC_PATHS, tooManyConnections } from './http/admission.js';
import type { LogFn, ServerContext } from './http/context.js';
import { applyCors } from './http/cors.js';
import type { Phase, ReadinessProbe } from './http/health.js';
import { HttpError, requestUrl, sendError, sendJson, setBodyTimeout } from './http/http.js';
import type { ServerMetrics } from './http/metrics.js';
import type { RateLimiter } from './http/rate-limit.js';
import { isLoopback } from './start-checks.js';
import { isStateUnavailable } from './state/unavailable.js';
import type { Tasks } from './tasks/tasks.js';

interface RequestLog {
  account: string;
  /** The token's id (never the token). */
  token: string;
  route: string;
  ttfb: number | undefined;
  code: string | undefined;
}

/** What dispatch reads of the running server; `phase` and `metrics` change as it starts and stops. */
export interface DispatchDeps {
  host: string;
  version: string;
  serverConfig: Config['server'];
  ctx: ServerContext;
  log: LogFn;
  redact: (text: string) => string;
  started: number;
  phase: () => Phase;
  metrics: () => ServerMetrics | undefined;
  sandbox: { ready: boolean; mode: 'local' | 'sandbox' };
  readiness: ReadinessProbe;
  loopDelay: IntervalHistogram;
  conversations: Conversations;
  /** Only counted (the engine loads on first use: lazy-tasks.ts). */
  tasks: Pick<Tasks, 'runningCount'>;
  board: Board;
  verifier: TokenVerifier;
  admission: Admission;
  rate: RateLimiter;
  /** The API's routes, loaded once (after the server listens). */
  router: () => Promise<ReturnType<typeof buildRoutes>>;
}

export function requestListener(deps: DispatchDeps): RequestListener {
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;

  /** Routes anyone may call (GET and HEAD; other methods 405): liveness, readiness, metrics, the API's description. */
  const publicRoute = async (pathname: string, res: ServerResponse): Promise<string | undefined> => {
    switch (pathname) {
      case '/health':
        // Liveness: the process answers. What it depends on is /ready's business.
        sendJson(res, deps.phase() === 'stopping' ? 503 : 200, {
          status: deps.phase() === 'stopping' ? 'stopping' : 'ok',
          version: deps.version,
          uptime_s: Math.round((Date.now() - deps.started) / 1000),
        });
        return pathname;
      case '/ready': {
        const r = await deps.readiness.read(deps.phase());
        sendJson(
          res,
          r.status === 'ready' ? 200 : 503,
          {
            ...r,
            version: deps.version,
            sandbox: { ready: deps.sandbox.ready, mode: deps.sandbox.mode },
            running: { conversations: deps.conversations.runningCount, tasks: deps.tasks.runningCount, streams: deps.ctx.streams.total() },
            event_loop_delay_ms: {
              p50: ms(deps.loopDelay.percentile(50)),
              p99: ms(deps.loopDelay.percentile(99)),
              max: ms(deps.loopDelay.max),
            },
          },
          r.status === 'ready' ? {} : { 'retry-after': '5' },
        );
        return pathname;
      }
      case '/metrics': {
        const metrics = deps.metrics();
        if (!metrics) throw new HttpError(503, 'starting', 'metrics are not loaded yet', { retryAfter: 1 });
        const m = await metrics.text();
        res.writeHead(200, { 'content-type': m.contentType, 'cache-control': 'no-store' });
        res.end(m.body);
        return pathname;
      }
      case '/openapi.json': {
        // Its schemas load only when asked for (not part of the start-up).
        const { openApiDocument } = await import('./api/openapi.js');
        sendJson(res, 200, openApiDocument(deps.version), { 'cache-control': 'public, max-age=300' });
        return pathname;
      }
      default:
        return undefined;
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, requestId: string, info: RequestLog, t0: number) => {
    checkHost(req, isLoopback(deps.host), deps.serverConfig.allowed_hosts);
    if (applyCors(req, res, deps.serverConfig.cors_origins)) {
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
    const boardRoute = await deps.board.handle(req, res, url);
    if (boardRoute) {
      info.route = boardRoute;
      return;
    }
    const header = req.headers['authorization'] ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    let verified = m ? await deps.verifier.verify(m[1]!) : undefined;
    // The board's cookie (docs/ui.md): only without a bearer header, and a change needs the CSRF header.
    const cookie = m ? undefined : deps.board.sessions.of(req);
    if (cookie && (await deps.board.live(cookie.session))) {
      if (req.method !== 'GET' && req.method !== 'HEAD' && !deps.board.sessions.csrfOk(req, cookie.session)) {
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
    deps.admission.authenticated(req.socket);
    info.account = account;
    info.token = verified.id;
    deps.rate.take(account);
    const match = (await deps.router()).match(req.method ?? 'GET', url.pathname);
    info.route = `${match.route.method} ${match.route.pattern}`;
    if (verified.readOnly && match.route.method !== 'GET')
      throw new HttpError(403, 'read_only_token', `this token may only read; ${match.route.method} needs a token made without --read-only`);
    setBodyTimeout(req, deps.serverConfig.body_timeout);
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

  return (req, res) => {
    const requestId =
      req.headers['x-request-id'] && /^[\w.-]{1,64}$/.test(String(req.headers['x-request-id']))
        ? String(req.headers['x-request-id'])
        : randomBytes(8).toString('hex');
    const t0 = performance.now();
    const info: RequestLog = { account: '', token: '', route: '', ttfb: undefined, code: undefined };
    res.setHeader('x-request-id', requestId);
    const admitted = deps.admission.begin(req.socket, (req.url ?? '/').split('?')[0]!);
    res.on('close', () => {
      deps.admission.end(req.socket);
      const duration = performance.now() - t0;
      // Never the token, the prompt or the query string: the route's pattern, the token's id.
      deps.log({
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
      deps
        .metrics()
        ?.request(
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
          deps.log({ msg: 'error hint', request_id: requestId, code: error.code, hint: error.extra['hint'] });
        return sendError(res, error, requestId, deps.redact);
      }
      info.code = 'internal_error';
      deps.log({ level: 'error', msg: 'request failed', request_id: requestId, error: deps.redact((error as Error).message) });
      sendError(
        res,
        new HttpError(500, 'internal_error', 'the server could not complete the request; its log has the details under this request id'),
        requestId,
      );
    });
  };
}
