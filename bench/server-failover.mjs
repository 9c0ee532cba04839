// The issue-23 target on three `atlas serve` on one PostgreSQL: N conversations × T turns spread
// over the servers (a command agent that works ~300 ms a turn), one server SIGKILLed midway. A
// turn cut off by the kill is recovered on another server (POST …/recover) once its lease has
// expired. Then every conversation is checked from a surviving server: event ids 1..n with none
// missing or twice, every turn completed or reported interrupted and then recovered, usage totals
// equal to the sum of the turns' usage events, and each completed turn's messages present. And at
// each live SSE client: one per conversation follows its events from the start, reconnecting to
// the next surviving server with Last-Event-ID whenever its stream ends (the kill cuts some), and
// must end with exactly the conversation's ids, each once; a turn's own client cut off by the kill
// reconnects to another server the same way and must read on without a gap or repeat to the
// turn's end (`interrupted`, or its `usage` when only the stream was cut).
// Usage: node bench/server-failover.mjs [conversations=100] [turns=4]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToken, postgresTools, startServer } from './cluster-lib.mjs';

const CONVERSATIONS = Number(process.argv[2] ?? 100);
const TURNS = Number(process.argv[3] ?? 4);
const AGENT = join(import.meta.dirname, '..', 'test', 'fixtures', 'server', 'stream-agent.mjs');
const LEASE_TTL_S = 3;
const work = mkdtempSync(join(tmpdir(), 'atlas-bench-failover-'));
const lib = await postgresTools(work);
const FLAGS = [
  '-c',
  'ai.agent=command',
  '-c',
  `ai.command=${process.execPath} ${AGENT}`,
  '-c',
  'server.max_streams_per_account=10000',
  '-c',
  'server.requests_per_second=0',
  '-c',
  'server.max_running_per_account=1000',
  '-c',
  `server.lease_ttl=${LEASE_TTL_S}s`,
];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function parseBlock(b) {
  return {
    id: Number(/^id: (\d+)/m.exec(b)?.[1]),
    type: /^event: (.*)$/m.exec(b)?.[1],
    data: JSON.parse(/^data: (.*)$/m.exec(b)?.[1] ?? '{}'),
  };
}

/**
 * Reads an SSE response as it comes, each event as soon as its block is whole: a stream cut off by
 * the kill keeps what arrived before. Never throws.
 */
async function events(res) {
  const out = [];
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.includes('event: ')) out.push(parseBlock(block));
      }
    }
  } catch {
    // Cut off: what arrived is kept.
    out.cut = true;
  }
  return out;
}

/**
 * A live client's ids, across its reconnections: each must be the one after the last it got (a
 * lower one is a repeat, a higher one a gap).
 */
class Ids {
  constructor(from = 0) {
    this.last = from;
    this.got = 0;
    this.gaps = 0;
    this.repeats = 0;
  }
  take(evs) {
    for (const e of evs) {
      if (e.id <= this.last) this.repeats++;
      else if (e.id > this.last + 1) this.gaps++;
      this.last = Math.max(this.last, e.id);
      this.got++;
    }
    return evs;
  }
}

const pg = lib.postgresSkipReason ? undefined : await lib.startPostgres({ durable: true });
if (!pg) {
  console.error(`PostgreSQL skipped: ${lib.postgresSkipReason}`);
  process.exit(0);
}
const servers = [];
try {
  const env = { ATLAS_DATABASE_URL: await pg.createDatabase('failover') };
  const homes = [0, 1, 2].map((i) => join(work, `server-${i}`));
  const tok = createToken(homes[0], env);
  servers.push(
    ...(await Promise.all(
      homes.map((h, i) => startServer(h, env, FLAGS, process.env.DEBUG ? join(tmpdir(), `atlas-failover-server-${i}.log`) : undefined)),
    )),
  );
  const alive = new Set([0, 1, 2]);
  const auth = { authorization: `Bearer ${tok}`, 'content-type': 'application/json' };
  const url = (i, path) => `http://127.0.0.1:${servers[i].port}${path}`;
  const pick = (n) => [...alive][n % alive.size];
  let done = 0;
  let cutOff = 0;
  let recovered = 0;
  const t0 = performance.now();

  /** After a cut-off: on a surviving server, wait for the lease to expire, then recover. */
  async function recover(conversation, n) {
    for (;;) {
      const i = pick(n++);
      note(`t-${conversation.slice(2)}`, `recover on ${i}`);
      try {
        const got = await (await fetch(url(i, `/conversations/${conversation}`), { headers: auth })).json();
        if (got.conversation?.status === 'running') {
          await sleep(500);
          continue;
        }
        if (got.conversation?.status !== 'interrupted') return;
        const res = await fetch(url(i, `/conversations/${conversation}/recover`), { method: 'POST', headers: auth });
        if (res.status === 409) continue;
        const evs = await events(res);
        if (evs.at(-1)?.type === 'usage') {
          recovered++;
          return;
        }
      } catch {
        await sleep(200);
      }
    }
  }

  /**
   * A live client of the conversation's events from id 0, as a dashboard would: each time its
   * stream ends (a turn's usage, an idle replay, or its server killed under it), it reconnects to
   * the next surviving server with Last-Event-ID, until the conversation's turns are done and a
   * last replay has been read to its end.
   */
  const finished = new Set();
  const watchers = [];
  /** With DEBUG: what each client waits on, printed while some have not finished. */
  const doing = new Map();
  const note = (who, what) => process.env.DEBUG && doing.set(who, `${what} @${((performance.now() - t0) / 1000).toFixed(1)}s`);
  const watchdog = process.env.DEBUG
    ? setInterval(
        () =>
          console.error(
            [...doing]
              .filter(([w]) => !finished.has(Number(w.split('-')[1])))
              .map(([w, d]) => `${w}: ${d}`)
              .join('\n'),
            '\n--',
          ),
        15_000,
      )
    : undefined;
  async function watch(c) {
    const ids = new Ids(0);
    let n = c + 1;
    let previous;
    let reconnections = 0;
    let cut = 0;
    for (;;) {
      const last = finished.has(c);
      const i = pick(n++);
      if (previous !== undefined && previous !== i) reconnections++;
      previous = i;
      let read = false;
      try {
        note(`w-${c}`, `watch on ${i} after ${ids.last}`);
        const res = await fetch(url(i, `/conversations/f-${c}/events`), { headers: { ...auth, 'last-event-id': String(ids.last) } });
        if (res.status === 200) {
          const evs = ids.take(await events(res));
          if (evs.cut) cut++;
          read = !evs.cut;
        } else await res.body?.cancel();
      } catch {
        // The server is gone: the next one.
      }
      if (last && read) break;
      await sleep(250);
    }
    return { ids, reconnections, cut };
  }
  for (let c = 0; c < CONVERSATIONS; c++) watchers.push(watch(c));

  /** The turns' own clients: each stream's ids, and, when the kill cut one, its reconnection elsewhere. */
  const turnClients = [];
  /** After a cut-off: the client reconnects to a surviving server with Last-Event-ID and reads on (to the turn's end). */
  async function reconnect(conversation, ids, n) {
    for (;;) {
      const i = pick(n++);
      try {
        note(`t-${conversation.slice(2)}`, `reconnect on ${i} after ${ids.last}`);
        const res = await fetch(url(i, `/conversations/${conversation}/events`), {
          headers: { ...auth, 'last-event-id': String(ids.last) },
        });
        if (res.status !== 200) {
          await res.body?.cancel();
          await sleep(200);
          continue;
        }
        const evs = ids.take(await events(res));
        if (!evs.cut) return evs;
      } catch {
        await sleep(200);
      }
    }
  }

  const killer = (async () => {
    while (done < (CONVERSATIONS * TURNS) / 2) await sleep(50);
    alive.delete(0);
    servers[0].child.kill('SIGKILL');
  })();

  await Promise.all(
    Array.from({ length: CONVERSATIONS }, async (_, c) => {
      const conversation = `f-${c}`;
      for (let k = 0; k < TURNS; k++) {
        for (let attempt = 0; ; attempt++) {
          let res;
          try {
            note(`t-${c}`, `turn ${k} on ${pick(c + k + attempt)}`);
            res = await fetch(url(pick(c + k + attempt), `/conversations/${conversation}/sandbox/sb`), {
              method: 'POST',
              headers: auth,
              body: JSON.stringify({ prompt: `sleep:300 turn ${k}` }),
            });
          } catch {
            continue; // Not accepted (the server is gone): another server takes it.
          }
          if (res.status !== 200) {
            await res.body?.cancel();
            await sleep(300);
            continue;
          }
          const evs = await events(res);
          const ids = new Ids(evs.length > 0 ? evs[0].id - 1 : 0);
          ids.take(evs);
          if (evs.at(-1)?.type === 'usage') break;
          // Accepted, then cut off by the kill: the client reconnects to another server and sees the
          // turn reported interrupted; then it is recovered there.
          cutOff++;
          const client = { ids, ended: false };
          turnClients.push(client);
          // Read on to the turn's end: `interrupted`, or its `usage` when the kill cut only the stream.
          if (evs.length > 0)
            client.ended = (await reconnect(conversation, ids, c + k + 1)).some((e) => e.type === 'interrupted' || e.type === 'usage');
          await recover(conversation, c + k + 1);
          break;
        }
        done++;
      }
      finished.add(c);
    }),
  );
  await killer;
  const watched = await Promise.all(watchers);
  clearInterval(watchdog);
  const wall = performance.now() - t0;

  // The checks, from a surviving server.
  let idProblems = 0;
  let turnProblems = 0;
  let usageProblems = 0;
  let messageProblems = 0;
  let interruptedThenRecovered = 0;
  let watcherProblems = 0;
  for (let c = 0; c < CONVERSATIONS; c++) {
    const i = pick(c);
    const conversation = `f-${c}`;
    const evs = await events(await fetch(url(i, `/conversations/${conversation}/events`), { headers: { ...auth, 'last-event-id': '0' } }));
    if (evs.some((e, n) => e.id !== n + 1)) idProblems++;
    // The live client got exactly the conversation's ids: each once, none missing.
    const w = watched[c].ids;
    if (w.gaps > 0 || w.repeats > 0 || w.last !== evs.at(-1)?.id || w.got !== evs.length) {
      watcherProblems++;
      if (process.env.DEBUG) console.error(conversation, 'watcher', w, 'log', evs.length);
    }
    const started = evs.filter((e) => e.type === 'turn_started').map((e) => e.data.turn);
    const usages = evs.filter((e) => e.type === 'usage');
    const interrupted = evs.filter((e) => e.type === 'interrupted').map((e) => e.data.turn);
    interruptedThenRecovered += interrupted.length;
    // Every turn that started ended with its usage, or was reported interrupted.
    if (started.some((t) => !usages.some((u) => u.data.turn === t) && !interrupted.includes(t))) {
      turnProblems++;
      if (process.env.DEBUG)
        console.error(
          conversation,
          evs
            .filter((e) => !['output', 'message', 'tool_use', 'tool_result'].includes(e.type))
            .map((e) => `${e.id}:${e.type}:${e.data.turn ?? ''}`)
            .join(' '),
        );
    }
    const record = (await (await fetch(url(i, `/conversations/${conversation}`), { headers: auth })).json()).conversation;
    const sum = usages.reduce((s, u) => s + (u.data.usage?.total_input_tokens ?? 0), 0);
    // A turn cut off before its turn_started event still counts (it is reported interrupted).
    const turnsSeen = Math.max(0, ...started, ...interrupted, ...usages.map((u) => u.data.turn ?? 0));
    if (record.stats.total_input_tokens !== sum || record.turns !== turnsSeen) {
      usageProblems++;
      if (process.env.DEBUG)
        console.error(conversation, 'record', record.status, record.turns, record.stats.total_input_tokens, 'events', started.length, sum);
    }
    const messages = (await (await fetch(url(i, `/conversations/${conversation}/messages?limit=1000`), { headers: auth })).json()).messages;
    const runs = new Set(messages.map((m) => m.conversation_id));
    if (runs.size < usages.filter((u) => u.data.ok).length) messageProblems++;
  }
  console.log(
    `${CONVERSATIONS} conversations × ${TURNS} turns over 3 servers on PostgreSQL, one SIGKILLed midway (lease ${LEASE_TTL_S} s)`,
  );
  console.table([
    {
      turns: CONVERSATIONS * TURNS,
      seconds: Number((wall / 1000).toFixed(1)),
      cut_off_by_the_kill: cutOff,
      recovered,
      interrupted_events: interruptedThenRecovered,
      conversations_with_id_gaps_or_repeats: idProblems,
      turns_neither_completed_nor_interrupted: turnProblems,
      usage_totals_not_the_sum: usageProblems,
      completed_turns_without_messages: messageProblems,
    },
  ]);
  const cutClients = turnClients.filter((t) => t.ids.got > 0);
  console.log(
    'Live SSE clients: one per conversation following all its events across reconnections, and each turn client cut off by the kill',
  );
  console.table([
    {
      conversation_clients: watched.length,
      their_reconnections_to_another_server: watched.reduce((n, w) => n + w.reconnections, 0),
      their_streams_cut_by_the_kill: watched.reduce((n, w) => n + w.cut, 0),
      events_they_received: watched.reduce((n, w) => n + w.ids.got, 0),
      clients_with_a_duplicate_missing_or_extra_event: watcherProblems,
      cut_turn_clients_reconnected: cutClients.length,
      of_which_read_on_to_the_turn_end: cutClients.filter((t) => t.ended).length,
      of_which_with_a_gap_or_repeat: cutClients.filter((t) => t.ids.gaps > 0 || t.ids.repeats > 0).length,
    },
  ]);
} finally {
  for (const s of servers) s.child.kill('SIGKILL');
  await pg.stop();
  rmSync(work, { recursive: true, force: true });
}
