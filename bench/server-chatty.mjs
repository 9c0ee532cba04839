// Issue 37: one turn whose command agent prints 8,000 messages of about 200 characters, on the
// embedded SQLite state and on PostgreSQL (started here in a temp folder, fsync on). While it
// streams, another client asks /health every 25 ms: the server's event-loop delay (its /metrics,
// reset at each scrape) and /health's answer times against the targets (p99 <= 50 ms, /health
// <= 100 ms), and the stream checked whole: every event id once, in order, and an ok usage event.
// Then 1,030 idle connections from one address: /health from it and a client from another.
// Usage: node bench/server-chatty.mjs [messages=8000]
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToken, loopDelay, pct, postgresTools, postTurn, sorted, startServer } from './cluster-lib.mjs';

const MESSAGES = Number(process.argv[2] ?? 8000);
const AGENT = join(import.meta.dirname, '..', 'test', 'fixtures', 'server', 'chatty-agent.sh');
const work = mkdtempSync(join(tmpdir(), 'atlas-bench-chatty-'));
const FLAGS = ['-c', 'ai.agent=command', '-c', `ai.command=/bin/bash ${AGENT}`];

/** One turn: resolves with its event ids and whether it ended with an ok usage event. */
function turn(port, tok, conversation) {
  return new Promise((resolve, reject) => {
    postTurn(port, tok, conversation, 'talk', reject, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
        resolve({ ids, ok: text.includes('event: usage') && text.includes('"ok":true') });
      });
      res.on('error', reject);
    });
  });
}

async function measure(label, env) {
  const home = mkdtempSync(join(work, 'home-'));
  const tok = createToken(home, env);
  const server = await startServer(home, { ...env, CHATTY_MESSAGES: String(MESSAGES) }, FLAGS);
  await turn(server.port, tok, 'warm');
  await loopDelay(server.port);
  const health = [];
  let streaming = true;
  const prober = (async () => {
    while (streaming) {
      const t = performance.now();
      await fetch(`http://127.0.0.1:${server.port}/health`).then((r) => r.arrayBuffer());
      health.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  const t0 = performance.now();
  const r = await turn(server.port, tok, 'chatty');
  const ms = performance.now() - t0;
  streaming = false;
  await prober;
  const loop = await loopDelay(server.port);
  const h = sorted(health);
  const gaps = r.ids.filter((id, i) => i > 0 && id !== r.ids[i - 1] + 1).length;
  const ok = r.ok && gaps === 0 && loop.p99 <= 50 && pct(h, 1) <= 100;
  console.log(
    `  ${label}: ${MESSAGES} messages in ${(ms / 1000).toFixed(1)} s, ${r.ids.length} events, ${gaps} id gaps or repeats, ${r.ok ? 'ok' : 'NOT ok'} usage; ` +
      `event-loop delay p99 ${loop.p99.toFixed(1)} / max ${loop.max.toFixed(1)} ms; /health (${h.length} asked) p50 ${pct(h, 0.5).toFixed(1)} / p99 ${pct(h, 0.99).toFixed(1)} / max ${pct(h, 1).toFixed(1)} ms` +
      `  (targets: loop p99 <= 50 ms, /health <= 100 ms) ${ok ? 'ok' : 'MISSED'}`,
  );
  server.child.kill('SIGTERM');
  await new Promise((done) => server.child.on('exit', done));
}

/** 1,030 idle connections from one address (more than server.max_connections), then /health and a client with a token from 127.0.0.2. */
async function flood() {
  const home = mkdtempSync(join(work, 'home-'));
  const tok = createToken(home, {});
  const server = await startServer(home, {}, FLAGS);
  const sockets = [];
  for (let i = 0; i < 1030; i++) {
    sockets.push(
      await new Promise((resolve) => {
        const s = connect(server.port, '127.0.0.1', () => resolve(s));
        s.on('error', () => resolve(s));
      }),
    );
  }
  const timed = async (path, headers, localAddress) => {
    const t = performance.now();
    const status = await new Promise((resolve) => {
      const req = request({ host: '127.0.0.1', port: server.port, path, headers, localAddress, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      });
      req.on('error', (e) => resolve(e.code));
      req.end();
    });
    return { status, ms: performance.now() - t };
  };
  const health = [];
  for (let i = 0; i < 20; i++) health.push(await timed('/health', {}, '127.0.0.1'));
  const other = await timed('/conversations', { authorization: `Bearer ${tok}` }, '127.0.0.2');
  const h = sorted(health.map((x) => x.ms));
  const ok = health.every((x) => x.status === 200) && other.status === 200 && pct(h, 1) <= 100;
  console.log(
    `  1,030 idle connections from one address: /health ${health.filter((x) => x.status === 200).length}/20 answered, p50 ${pct(h, 0.5).toFixed(1)} / max ${pct(h, 1).toFixed(1)} ms; ` +
      `a client from another address ${other.status} in ${other.ms.toFixed(1)} ms  (targets: /health <= 100 ms, other clients served) ${ok ? 'ok' : 'MISSED'}`,
  );
  for (const s of sockets) s.destroy();
  server.child.kill('SIGTERM');
  await new Promise((done) => server.child.on('exit', done));
}

try {
  await measure('SQLite', {});
  await flood();
  const lib = await postgresTools(work);
  const skip = lib.postgresSkipReason;
  if (skip) console.log(`  PostgreSQL: not measured (${skip})`);
  else {
    const pg = await lib.startPostgres({ durable: true });
    try {
      await measure('PostgreSQL', { ATLAS_DATABASE_URL: pg.url });
    } finally {
      await pg.stop();
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
