// Prometheus metrics at GET /metrics (prom-client): turns, tasks, their durations, tokens, errors,
// what runs and waits now, and Node's own (event-loop delay among them). No label carries an
// account, a conversation id or a path: the numbers only.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { StoredEvent } from '../state/event-log.js';

export interface Depths {
  conversations: () => number;
  tasks: () => number;
  streams: () => number;
  /** Turns waiting for their agent to start (src/server/conversations/pace.ts). */
  startsWaiting: () => number;
  /** Requests waiting for a running-work slot of their account. */
  requestsQueued: () => number;
}

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly turns = new Counter({
    name: 'atlas_turns_total',
    help: 'conversation turns ended, by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly turnSeconds = new Histogram({
    name: 'atlas_turn_duration_seconds',
    help: 'how long a conversation turn took',
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
    registers: [this.registry],
  });
  private readonly tasks = new Counter({
    name: 'atlas_task_runs_total',
    help: 'task commands (start, recover, approve, ...) ended, by command and outcome',
    labelNames: ['command', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: 'atlas_tokens_total',
    help: 'tokens used by conversation turns, by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly requests = new Counter({
    name: 'atlas_http_requests_total',
    help: 'HTTP requests answered, by route and status',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly errors = new Counter({
    name: 'atlas_http_errors_total',
    help: 'HTTP error answers, by code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  private readonly requestSeconds = new Histogram({
    name: 'atlas_http_first_byte_seconds',
    help: 'time to the first byte of an answer (the stream headers for SSE)',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  constructor(depths: Depths) {
    collectDefaultMetrics({ register: this.registry, prefix: 'atlas_', eventLoopMonitoringPrecision: 10 });
    new Gauge({
      name: 'atlas_running',
      help: 'work running now: conversation turns, task commands, open streams',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      // Read at scrape time: nothing to keep in step.
      collect() {
        this.set({ kind: 'conversations' }, depths.conversations());
        this.set({ kind: 'tasks' }, depths.tasks());
        this.set({ kind: 'streams' }, depths.streams());
      },
    });
    new Gauge({
      name: 'atlas_queued',
      help: 'work waiting now: requests queued for a running slot (requests), turns whose agent waits to start (turn_starts)',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      collect() {
        this.set({ kind: 'turn_starts' }, depths.startsWaiting());
        this.set({ kind: 'requests' }, depths.requestsQueued());
      },
    });
  }

  /** An event appended to a conversation's or a task's log. */
  observeEvent(kind: 'conversation' | 'task', e: StoredEvent): void {
    if (kind === 'conversation' && e.type === 'usage') {
      this.turns.inc({ outcome: e.data['ok'] === true ? 'ok' : 'failed' });
      const u = e.data['usage'] as Record<string, number | null> | null | undefined;
      if (u) {
        this.tokens.inc({ kind: 'input' }, u['total_input_tokens'] ?? 0);
        this.tokens.inc({ kind: 'output' }, u['total_output_tokens'] ?? 0);
        this.tokens.inc({ kind: 'cache' }, u['total_cache_tokens'] ?? 0);
      }
    } else if (kind === 'task' && e.type === 'finished') {
      this.tasks.inc({ command: String(e.data['command'] ?? 'unknown'), outcome: e.data['exit_code'] === 0 ? 'ok' : 'failed' });
    }
  }

  turnEnded(durationMs: number): void {
    this.turnSeconds.observe(durationMs / 1000);
  }

  request(route: string, status: number, firstByteMs: number | undefined, code: string | undefined): void {
    this.requests.inc({ route: route || 'unmatched', status: String(status) });
    if (code) this.errors.inc({ code });
    if (firstByteMs !== undefined) this.requestSeconds.observe(firstByteMs / 1000);
  }

  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
