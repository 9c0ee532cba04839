// Every configuration key atlas knows, its type, default and environment variable (DESIGN §8).
// Durations are written as Go-style strings ("5m") and held in milliseconds.
import { DEFAULT_MAX_CHECKPOINTS } from '../domain/checkpoint.js';
import { parseDuration } from '../domain/duration.js';
import { sandboxEnvNameProblem } from '../domain/sandbox-env.js';

export interface Config {
  hooks: {
    max_checkpoints: number;
    checkpoint_interval: number;
    stale_threshold: number;
    heartbeat_interval: number;
    key_derivation: { purpose: number; coin_type: number; account: number };
    retention: { completed: number; failed: number; abandoned: number };
  };
  templates: { dirs: string[] };
  ai: {
    agent: 'claude' | 'command';
    command: string;
    model: string;
    permission_mode: string;
    timeout: number;
    stall_timeout: number;
    allowed_tools: string[];
    default_allowed_tools: boolean;
    on_permission_denial: 'warn' | 'fail';
  };
  validation: {
    commands: string[];
    timeout: number;
    tree: 'worktree' | 'pristine';
    setup: string[];
    dependencies: string[];
    require_control_review: boolean;
  };
  git: { worktree: boolean; remote: string; push: boolean; pull_request: boolean; pr_command: string };
  execution: {
    mode: 'local' | 'sandbox';
    sandbox: { allowed_domains: string[]; allow_write: string[]; deny_read: string[]; env: string[] };
  };
  sync: {
    store: string;
    exclude: string[];
    stale_threshold: number;
    max_delete: string;
    init_from_store: boolean;
    keep_versions: number;
    retries: number;
    s3: { endpoint: string; force_path_style: boolean; region: string };
  };
  lifecycle: { on_cold_start: string[]; on_message: string[]; on_stream_finish: string[]; on_terminate: string[]; timeout: number };
  server: {
    repos_root: string;
    max_body: number;
    max_streams_per_account: number;
    max_running_per_account: number;
    max_queued_per_account: number;
    queue_timeout: number;
    grace_period: number;
    sse_heartbeat: number;
    client_buffer: number;
    terminate_on_delete: boolean;
    headers_timeout: number;
    request_timeout: number;
    body_timeout: number;
    max_connections: number;
    requests_per_second: number;
    cors_origins: string[];
    allowed_hosts: string[];
    database: string;
    lease_ttl: number;
    auto_recover: boolean;
    messages: string;
    spawner: 'auto' | 'python' | 'node';
  };
}

type Kind =
  | { type: 'int'; min: number; max?: number }
  /** min: the shortest sensible value, whole seconds in ms (0 stays allowed when zeroAllowed: "off"). */
  | { type: 'duration'; min?: number; zeroAllowed?: boolean }
  | { type: 'bool' }
  | { type: 'string' }
  | { type: 'enum'; values: readonly string[] }
  /** check: what is wrong with one entry (undefined: fine). */
  | { type: 'strings'; check?: (item: string) => string | undefined };

export interface Leaf {
  key: string;
  kind: Kind;
  default: unknown;
  env: string;
  doc: string;
}

const H = 3_600_000;
const M = 60_000;

function leaf(key: string, kind: Kind, dflt: unknown, doc: string): Leaf {
  return { key, kind, default: dflt, env: `ATLAS_${key.replace(/\./g, '_').toUpperCase()}`, doc };
}

// biome-ignore format: a table of the settings, one key a line, read down the keys.
export const LEAVES: readonly Leaf[] = [
  leaf('hooks.max_checkpoints', { type: 'int', min: 1, max: 10_000 }, DEFAULT_MAX_CHECKPOINTS, 'checkpoints kept per task, oldest pruned'),
  leaf('hooks.checkpoint_interval', { type: 'duration', min: 1000, zeroAllowed: true }, 5 * M, 'interval checkpoints while a step runs (0 disables)'),
  leaf('hooks.stale_threshold', { type: 'duration', min: 10_000 }, 5 * M, 'a running task whose heartbeat is older has crashed'),
  leaf('hooks.heartbeat_interval', { type: 'duration', min: 1000 }, 10_000, 'how often a running task proves it is alive'),
  leaf('hooks.key_derivation.purpose', { type: 'int', min: 0, max: 0x7fffffff }, 44, "BIP44 purpose (hardened)"),
  leaf('hooks.key_derivation.coin_type', { type: 'int', min: 0, max: 0x7fffffff }, 236, 'coin type (hardened)'),
  leaf('hooks.key_derivation.account', { type: 'int', min: 0, max: 0x7fffffff }, 0, 'receipt signing account (hardened)'),
  leaf('hooks.retention.completed', { type: 'duration' }, 720 * H, 'keep completed tasks this long'),
  leaf('hooks.retention.failed', { type: 'duration' }, 168 * H, 'keep failed tasks this long'),
  leaf('hooks.retention.abandoned', { type: 'duration' }, 168 * H, 'keep abandoned tasks this long'),
  leaf('templates.dirs', { type: 'strings' }, [], 'extra template folders, searched after the repository\'s .atlas/templates'),
  leaf('ai.agent', { type: 'enum', values: ['claude', 'command'] }, 'claude', 'agent runner: Claude Code, or any command'),
  leaf('ai.command', { type: 'string' }, '', 'for agent "command": the command line; the prompt arrives on stdin, in $ATLAS_PROMPT and as {prompt}'),
  leaf('ai.model', { type: 'string' }, '', 'model passed to the agent (empty: its default)'),
  leaf('ai.permission_mode', { type: 'string' }, 'acceptEdits', 'Claude Code --permission-mode'),
  leaf('ai.timeout', { type: 'duration', min: 1000 }, 60 * M, 'longest an agent run may take'),
  leaf('ai.stall_timeout', { type: 'duration', min: 100 }, 3 * M, 'an agent run that gives no sign of life this long while it waits for the model API is stopped (a hanging API)'),
  // Conversations and permissions (issue 9, docs/conversations.md).
  leaf('ai.allowed_tools', { type: 'strings' }, [], 'Claude Code --allowedTools patterns every ai step gets, e.g. ["Bash(make test)"]'),
  leaf('ai.default_allowed_tools', { type: 'bool' }, true, 'also allow the task\'s validation commands and `atlas checkpoint` (as Bash patterns)'),
  leaf('ai.on_permission_denial', { type: 'enum', values: ['warn', 'fail'] }, 'warn', 'a tool call the agent was refused: warn (step ok, shown) or fail the step'),
  leaf('validation.commands', { type: 'strings' }, [], 'validation commands (empty: detected from the repository)'),
  leaf('validation.timeout', { type: 'duration', min: 1000 }, 30 * M, 'longest one validation command may take'),
  // Pristine validation (issue 18, docs/keys-and-verification.md "Pristine validation").
  leaf('validation.tree', { type: 'enum', values: ['worktree', 'pristine'] }, 'worktree', 'where validation runs: the task\'s working tree, or a pristine copy of its files with dependencies no step could write'),
  leaf('validation.setup', { type: 'strings' }, [], 'pristine tree: commands that build its dependency folders (e.g. ["npm ci"]), cached by the hash of the lockfiles'),
  leaf('validation.dependencies', { type: 'strings' }, ['node_modules', '.venv'], 'pristine tree: the dependency folders validation.setup makes (cached), or taken read-only from the repository\'s main checkout'),
  leaf('validation.require_control_review', { type: 'bool' }, false, 'atlas verify (repository policy): refuse receipts of tasks whose control-path changes no person approved (--require-control-review)'),
  leaf('git.worktree', { type: 'bool' }, true, 'run tasks in a new git worktree (false: in the current checkout)'),
  leaf('git.remote', { type: 'string' }, 'origin', 'remote that git steps push to'),
  leaf('git.push', { type: 'bool' }, false, 'let git steps push'),
  leaf('git.pull_request', { type: 'bool' }, false, 'let git steps open pull requests'),
  leaf('git.pr_command', { type: 'string' }, 'gh pr create --fill --head {branch}', 'command that opens a pull request'),
  leaf('execution.mode', { type: 'enum', values: ['local', 'sandbox'] }, 'local', 'where commands and agents run: on this machine, or in an OS sandbox (docs/execution-modes.md)'),
  leaf('execution.sandbox.allowed_domains', { type: 'strings' }, ['api.anthropic.com', 'registry.npmjs.org'], 'hosts sandboxed steps may reach (plus the host of $ANTHROPIC_BASE_URL)'),
  leaf('execution.sandbox.allow_write', { type: 'strings' }, [], 'extra paths sandboxed steps may write (besides the worktree, its git folders, the task temp folder)'),
  leaf('execution.sandbox.deny_read', { type: 'strings' }, [], 'extra paths sandboxed steps may not read (besides keys, ~/.ssh, ~/.aws, ... and other tasks)'),
  leaf('execution.sandbox.env', { type: 'strings', check: sandboxEnvNameProblem }, [], 'environment variables sandboxed steps get besides PATH, HOME, locale, terminal, TMPDIR and the agent\'s API (docs/execution-modes.md)'),
  leaf('sync.store', { type: 'string' }, '', 'workspace sync store: a folder, file:// URL or s3://bucket/prefix (empty: the sync commands use $ATLAS_HOME/store, the lifecycle hooks do not sync)'),
  leaf('sync.exclude', { type: 'strings' }, [], 'patterns never synced (gitignore-like: name, dir/, path/**/*.log); .git and .sandbox-state never are'),
  leaf('sync.stale_threshold', { type: 'duration' }, 1 * H, 'a pull runs when the last sync is older than this (fresher: nothing to do unless --force)'),
  leaf('sync.max_delete', { type: 'string' }, '50%', 'a pull that would delete more tracked files than this (a count, or a % of them) stops unless --force'),
  leaf('sync.init_from_store', { type: 'bool' }, false, 'restore the workspace from sync.store before each agent run (OnColdStart)'),
  leaf('sync.keep_versions', { type: 'int', min: 0, max: 1_000_000 }, 0, 'after each successful push, remove all but the newest N complete versions (0: keep all; atlas sync prune)'),
  leaf('sync.retries', { type: 'int', min: 0, max: 100 }, 10, 'how many times an S3 request that failed is sent again, with backoff and jitter (AWS_MAX_ATTEMPTS, when set, is the number of attempts instead)'),
  leaf('sync.s3.endpoint', { type: 'string' }, '', 'S3-compatible endpoint URL (empty: AWS)'),
  leaf('sync.s3.force_path_style', { type: 'bool' }, false, 'address buckets as endpoint/bucket (most S3-compatible servers need it)'),
  leaf('sync.s3.region', { type: 'string' }, '', 'S3 region (empty: AWS_REGION, AWS_DEFAULT_REGION, then us-east-1)'),
  // Lifecycle hooks (docs/lifecycle-hooks.md): run after the builtins and the template's commands.
  leaf('lifecycle.on_cold_start', { type: 'strings' }, [], 'commands run before an agent starts in a workspace (a failure stops the step)'),
  leaf('lifecycle.on_message', { type: 'strings' }, [], 'commands run for each message of an agent run (failures are logged)'),
  leaf('lifecycle.on_stream_finish', { type: 'strings' }, [], 'commands run when an agent run ends, with its token usage (failures are logged)'),
  leaf('lifecycle.on_terminate', { type: 'strings' }, [], 'commands run when a task ends or its worktree is removed (failures are logged)'),
  leaf('lifecycle.timeout', { type: 'duration' }, 60_000, 'longest one lifecycle hook command may take'),
  // atlas serve (docs/server.md)
  leaf('server.repos_root', { type: 'string' }, '', 'POST /tasks may only name repositories inside this folder (empty: tasks over HTTP are off)'),
  leaf('server.max_body', { type: 'int', min: 1024, max: 64 * 1024 * 1024 }, 1024 * 1024, 'largest request body in bytes (413 above)'),
  leaf('server.max_running_per_account', { type: 'int', min: 1, max: 10_000 }, 8, 'turns and task commands one account may run at once, counted until their agent stopped (more wait in the queue)'),
  leaf('server.max_queued_per_account', { type: 'int', min: 0, max: 10_000 }, 16, 'requests for work one account may have waiting for a running slot (429 with Retry-After above)'),
  leaf('server.queue_timeout', { type: 'duration', min: 100 }, 30_000, 'longest a request waits in its account\'s queue (then 429 with Retry-After)'),
  leaf('server.max_streams_per_account', { type: 'int', min: 1, max: 10_000 }, 16, 'concurrent SSE streams one account may hold (429 above)'),
  leaf('server.grace_period', { type: 'duration' }, 30_000, 'on SIGTERM, how long running streams get to finish before they are checkpointed and stopped'),
  leaf('server.sse_heartbeat', { type: 'duration' }, 15_000, 'comment line sent on idle SSE streams so proxies keep them open'),
  leaf('server.client_buffer', { type: 'int', min: 4096, max: 256 * 1024 * 1024 }, 1024 * 1024, 'bytes an SSE client may fall behind before it is dropped (it reconnects with Last-Event-ID)'),
  leaf('server.terminate_on_delete', { type: 'bool' }, true, 'DELETE /conversations/{id} also removes the conversation\'s sandbox workspace'),
  leaf('server.headers_timeout', { type: 'duration' }, 10_000, 'longest a client may take to send a request\'s headers (the connection is closed after)'),
  leaf('server.request_timeout', { type: 'duration' }, 30_000, 'longest a client may take to send a whole request, headers and body (408, then closed)'),
  leaf('server.body_timeout', { type: 'duration' }, 15_000, 'longest a handler waits for a request body once it starts reading it (408)'),
  leaf('server.max_connections', { type: 'int', min: 1, max: 1_000_000 }, 1024, 'open connections the server accepts at once (more are closed at once)'),
  leaf('server.requests_per_second', { type: 'int', min: 0, max: 1_000_000 }, 20, 'requests one account may make per second, with bursts of twice that (429 with Retry-After above; 0: no limit)'),
  leaf('server.allowed_hosts', { type: 'strings' }, [], 'Host names a server listening on a loopback address answers to besides 127.0.0.1, localhost and [::1], e.g. the name a proxy in front forwards (others: 421, a DNS-rebinding defence)'),
  leaf('server.cors_origins', { type: 'strings' }, [], 'browser origins allowed to call the API (exact, e.g. https://board.example.com; empty: no CORS headers)'),
  leaf('server.lease_ttl', { type: 'duration', min: 3000 }, 30_000, 'a running turn\'s lease in the server state lasts this long without a renewal; then another server may mark the turn interrupted and recover it'),
  leaf('server.auto_recover', { type: 'bool' }, false, 'a turn whose server died (its lease expired) is recovered at once by the server that finds it, from the last pushed version, as POST .../recover does (false: marked interrupted, left for POST .../recover)'),
  leaf('server.messages', { type: 'string' }, '', 'where the server keeps conversation messages: dynamodb://TABLE[?endpoint=URL&region=NAME] (made on first use if missing; AWS credentials from the usual AWS_* variables) or empty: with the rest of the server state'),
  leaf('server.spawner', { type: 'enum', values: ['auto', 'python', 'node'] }, 'auto', 'what starts the agents beside the server: python (posix_spawn, no fork), node (a fork from a small Node.js process), or auto: python where python3 is installed'),
  leaf('server.database', { type: 'string' }, '', 'where `atlas serve` keeps its state (accounts and tokens; atlas serve migrate copies the rest): a postgres:// URL shared by every server on it (empty: ATLAS_DATABASE_URL, else SQLite in $ATLAS_HOME/server/state.db); its password is never printed'),
];

export const LEAF_BY_KEY: ReadonlyMap<string, Leaf> = new Map(LEAVES.map((l) => [l.key, l]));

/** Converts a raw value (from YAML, an env var or a flag) or says what is wrong with it. */
export function coerce(leaf: Leaf, raw: unknown): { ok: true; value: unknown } | { ok: false; problem: string } {
  const k = leaf.kind;
  const text = typeof raw === 'string' ? raw.trim() : raw;
  switch (k.type) {
    case 'int': {
      const n = typeof text === 'number' ? text : typeof text === 'string' && /^-?\d+$/.test(text) ? Number(text) : NaN;
      if (!Number.isInteger(n)) return { ok: false, problem: `expected a whole number, got ${JSON.stringify(raw)}` };
      if (n < k.min || (k.max !== undefined && n > k.max)) {
        return { ok: false, problem: `expected ${k.min}..${k.max ?? '∞'}, got ${n}` };
      }
      return { ok: true, value: n };
    }
    case 'duration': {
      const ms = typeof text === 'number' && text === 0 ? 0 : typeof text === 'string' ? parseDuration(text) : undefined;
      if (ms === undefined) return { ok: false, problem: `expected a duration like 30s, 5m or 720h, got ${JSON.stringify(raw)}` };
      if (k.min !== undefined && ms < k.min && !(ms === 0 && k.zeroAllowed)) {
        return {
          ok: false,
          problem: `expected at least ${k.min / 1000}s${k.zeroAllowed ? ' (or 0 to turn it off)' : ''}, got ${JSON.stringify(raw)}`,
        };
      }
      return { ok: true, value: ms };
    }
    case 'bool': {
      if (typeof text === 'boolean') return { ok: true, value: text };
      if (text === 'true' || text === '1' || text === 'yes') return { ok: true, value: true };
      if (text === 'false' || text === '0' || text === 'no') return { ok: true, value: false };
      return { ok: false, problem: `expected true or false, got ${JSON.stringify(raw)}` };
    }
    case 'string':
      if (typeof text === 'string') return { ok: true, value: text };
      if (typeof text === 'number') return { ok: true, value: String(text) };
      return { ok: false, problem: `expected text, got ${JSON.stringify(raw)}` };
    case 'enum':
      if (typeof text === 'string' && k.values.includes(text)) return { ok: true, value: text };
      return { ok: false, problem: `expected one of ${k.values.join(', ')}, got ${JSON.stringify(raw)}` };
    case 'strings': {
      if (typeof text === 'string') {
        if (text.startsWith('[')) {
          try {
            return coerce(leaf, JSON.parse(text));
          } catch {
            return { ok: false, problem: `expected a JSON list of strings, got ${text}` };
          }
        }
        return text.length > 0 ? coerce(leaf, [text]) : { ok: true, value: [] };
      }
      if (Array.isArray(text) && text.every((s) => typeof s === 'string')) {
        const problem = k.check && text.map(k.check).find((p) => p !== undefined);
        return problem ? { ok: false, problem } : { ok: true, value: text };
      }
      return { ok: false, problem: `expected a list of strings, got ${JSON.stringify(raw)}` };
    }
  }
}
