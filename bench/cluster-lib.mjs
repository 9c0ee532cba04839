// Shared by bench/server-cluster.mjs, server-failover.mjs, server-chatty.mjs and server.mjs: a real PostgreSQL (the test
// helper, bundled; pg imported from node_modules by path) and `atlas serve` processes on it.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ATLAS, importBundle, ROOT, untilListening } from './lib.mjs';

/** { startPostgres, postgresSkipReason, pg } from the test helper, bundled into `work`. */
export async function postgresTools(work) {
  const require = createRequire(join(ROOT, 'package.json'));
  writeFileSync(
    join(work, 'entry.ts'),
    `export { startPostgres, postgresSkipReason } from ${JSON.stringify(join(ROOT, 'test/helpers/postgres.ts'))};\nexport { default as pg } from 'pg';\n`,
  );
  const linked = {
    name: 'linked',
    setup: (b) => b.onResolve({ filter: /^pg$/ }, (a) => ({ path: require.resolve(a.path), external: true })),
  };
  return importBundle(
    join(work, 'lib.mjs'),
    {
      entryPoints: [join(work, 'entry.ts')],
      plugins: [linked],
    },
    { require: true },
  );
}

/**
 * Starts `atlas serve --local` with `flags` before the command; resolves with its port once it
 * listens. With `logFile`, its log lines are kept there (for DEBUG runs).
 */
export function startServer(home, env, flags, logFile) {
  const child = spawn(process.execPath, [ATLAS, ...flags, 'serve', '--port', '0', '--local'], {
    env: { ...process.env, ATLAS_HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return untilListening(child).then((port) => {
    if (logFile) child.stdout.pipe(createWriteStream(logFile));
    else child.stdout.resume();
    return { child, port };
  });
}

/** POSTs one turn's prompt over a fresh connection to 127.0.0.1; `onResponse` reads the SSE answer. */
export function postTurn(port, tok, conversation, prompt, onError, onResponse) {
  const body = JSON.stringify({ prompt });
  const headers = { authorization: `Bearer ${tok}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  const req = request(
    { host: '127.0.0.1', port, method: 'POST', path: `/conversations/${conversation}/sandbox/s`, agent: false, headers },
    onResponse,
  );
  req.on('error', onError);
  req.end(body);
}

export function createToken(home, env) {
  return JSON.parse(
    spawnSync(process.execPath, [ATLAS, '--json', 'serve', 'token', 'create', '--account', 'bench'], {
      env: { ...process.env, ATLAS_HOME: home, ...env },
      encoding: 'utf8',
    }).stdout,
  ).token;
}

export const sorted = (a) => [...a].sort((x, y) => x - y);
export const pct = (s, p) => s[Math.min(s.length - 1, Math.floor(s.length * p))];

/** A server's event-loop delay since the last scrape of its /metrics (prom-client resets it on each one), in ms. */
export async function loopDelay(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const read = (name) => Number(new RegExp(`^${name} ([\\d.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return {
    p50: read('atlas_nodejs_eventloop_lag_p50_seconds'),
    p99: read('atlas_nodejs_eventloop_lag_p99_seconds'),
    max: read('atlas_nodejs_eventloop_lag_max_seconds'),
  };
}
