// `atlas serve`: node:http (no framework: start-up is a feature), bearer tokens per account, the
// routes, a JSON-lines access log, /health, /ready, /metrics and /openapi.json, limits on slow and
// greedy clients, graceful stop on SIGTERM and detection of work whose server died.
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import { Spawner } from '../exec/spawner/client.js';
import type { LifecycleBus } from '../lifecycle/types.js';
import { parseStoreAddress } from '../sync/stores/open-store.js';
import { serverDir, TokenVerifier } from './accounts/tokens.js';
import type { buildRoutes } from './api/routes.js';
import { Board, findUiDir } from './board/board.js';
import type { LocalTaskWatcher } from './board/local-watch.js';
import { LeaseSweep } from './cluster/lease-sweep.js';
import { LazyState } from './cluster/server-state.js';
import { Conversations } from './conversations/conversations.js';
import { pacedWaiting } from './conversations/pace.js';
import { Admission, admissionLimits } from './http/admission.js';
import type { LogFn, ServerContext } from './http/context.js';
import { StreamLimiter } from './http/context.js';
import type { Phase } from './http/health.js';
import { checkDatabase, checkState, checkStore, ReadinessProbe } from './http/health.js';
import type { ServerMetrics } from './http/metrics.js';
import { RateLimiter } from './http/rate-limit.js';
import { makeRedactor } from './http/redact.js';
import { WorkLimiter } from './http/work-limit.js';
import { requestListener } from './request-dispatch.js';
import { serverStop } from './server-stop.js';
import { holdSandboxOrFail, isLoopback, sandboxReadiness, stopDeadServersBridges } from './start-checks.js';
import { AccountEvents } from './state/account-events.js';
import { ObservedEventLogs } from './state/observed-logs.js';
import { LazyTasks, serverTasksRanHere } from './tasks/lazy-tasks.js';

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

export interface RunningServer {
  port: number;
  url: string;
  /** Graceful stop: refuse new work, let streams finish within the grace period, then interrupt. */
  stop(reason: string): Promise<void>;
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
  await stopDeadServersBridges(options.home, (s) =>
    log({ msg: "stopped a dead server's sandbox bridges", processes: s.processes, sockets: s.sockets }),
  );
  // Started now, so a sandbox that cannot run fails the start-up, not the first turn.
  const releaseSandbox = options.local ? undefined : await holdSandboxOrFail(options.config, options.home);
  if (options.local)
    warn("--local: agents and commands run UNSANDBOXED on this machine, with the server's permissions. Serve only people you trust.");
  if (!isLoopback(options.host)) {
    warn(
      `listening on ${options.host}, not loopback: put a TLS proxy in front (bearer tokens and prompts would otherwise cross the network in clear text)`,
    );
  }
  // The agents' spawner starts once the server listens (not part of the start-up; a first turn
  // waits for it).
  const spawnerNote = (note: string) => log({ level: 'error', msg: 'process spawner', note });
  let startSpawner: () => void = () => undefined;
  const runtime = options.config.server.spawner;
  const spawner = new Promise<void>((go) => (startSpawner = go)).then(() =>
    Spawner.start({ note: spawnerNote, ...(runtime !== 'auto' ? { runtime } : {}) }).catch((error: Error) => {
      spawnerNote(`${error.message}: this process starts the agents itself`);
      return undefined;
    }),
  );
  const serverConfig = options.config.server;
  const state = new LazyState(options.home, options.config.server.database, options.config.server.messages);
  const logError = (error: Error) => log({ level: 'error', msg: 'event not stored', error: redact(error.message) });
  const accountEvents = new AccountEvents(() => state.get(), logError);
  // The lifecycle buses' code (the configuration's hooks, recording, sync) loads with what runs a
  // turn, once the server listens (Conversations.preload).
  let buses = options.lifecycle;
  let busesLoading: Promise<void> | undefined;
  const ctx: ServerContext = {
    home: options.home,
    config: options.config,
    version: options.version,
    lifecycle: (beforePublish) => {
      if (!buses) throw new Error('a lifecycle bus was asked for before lifecycleReady()');
      return buses(beforePublish);
    },
    lifecycleReady: () =>
      (busesLoading ??= buses
        ? Promise.resolve()
        : import('./conversations/lifecycle-adapter.js').then((m) => {
            buses = m.serverLifecycle(options.home, options.config, (e) => log(e));
          })),
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
      (key) => accountEvents.mirrorOf(key),
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
    spawner,
    stopping: undefined,
  };
  const verifier = new TokenVerifier(ctx.state);
  const board = new Board(verifier, options.uiDir ?? findUiDir(), options.localLogin);
  const conversations = new Conversations(ctx);
  const tasks = new LazyTasks(ctx);
  // The API's routes and the task engine behind them load once the server listens: not part of
  // the start-up; a request that comes first waits for the same loading.
  let routes: Promise<ReturnType<typeof buildRoutes>> | undefined;
  const router = () =>
    (routes ??= Promise.all([import('./api/routes.js'), tasks.load()]).then(([m, engine]) =>
      m.buildRoutes(ctx, conversations, engine, accountEvents),
    ));
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

  const admission = new Admission(admissionLimits(serverConfig.max_connections));
  const server = createServer(
    { connectionsCheckingInterval: Math.min(1_000, serverConfig.headers_timeout) },
    requestListener({
      host: options.host,
      version: options.version,
      serverConfig,
      ctx,
      log,
      redact,
      started,
      phase: () => phase,
      metrics: () => metrics,
      sandbox,
      readiness,
      loopDelay,
      conversations,
      tasks,
      board,
      verifier,
      admission,
      rate,
      router,
    }),
  );
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
  const engine = serverTasksRanHere(options.home) || options.localTasks ? await tasks.load() : undefined;
  const crashed = engine
    ? await engine.findCrashed().catch((error: Error) => {
        warn(`could not look for cut-off tasks (the server state does not answer): ${error.message}`);
        return [];
      })
    : [];
  reportCutOff(
    'task',
    crashed.map((t) => t.task_id),
  );
  if (options.recover) for (const t of crashed) engine?.recoverInBackground(t);
  let localWatch: LocalTaskWatcher | undefined;
  if (options.localTasks && engine)
    localWatch = new (await import('./board/local-watch.js')).LocalTaskWatcher(ctx, engine, options.localTasks);
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
  startSpawner();
  // The routes and what runs a turn load now, before the first request most likely comes (a
  // damaged install's failure to load them is a 500 for each request that needs them; /health and
  // /ready still answer).
  void router().catch(() => undefined);
  void conversations.preload().catch(() => undefined);
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

  const stop = serverStop({
    ctx,
    log,
    setPhase: (p) => (phase = p),
    gracePeriod: options.config.server.grace_period,
    server,
    conversations,
    tasks,
    localWatch,
    leaseSweep,
    loopDelay,
    releaseSandbox,
    closeSpawner: () => spawner.then((s) => s?.close()),
    accountEvents,
    state,
  });
  return { port, url, stop };
}
