// A real PostgreSQL for tests: initdb in a temp folder, listening on 127.0.0.1 on a free port with
// its socket in that folder, stopped (and the folder removed) by stop(). PostgreSQL refuses to run
// as root, so as root the cluster belongs to `nobody` (or a system user made for it) and its programs run through runuser.
// Reuse: `const pg = await startPostgres(); const url = await pg.createDatabase('x'); … await pg.stop();`
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from './free-port.js';

const PG_ROOT = '/usr/lib/postgresql';

/** The newest installed PostgreSQL's bin folder, or undefined. */
export function postgresBin(): string | undefined {
  if (!existsSync(PG_ROOT)) return undefined;
  const versions = readdirSync(PG_ROOT)
    .filter((v) => existsSync(join(PG_ROOT, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(PG_ROOT, versions[0], 'bin');
}

/** Why the PostgreSQL tests cannot run here (undefined: they can). CI installs the server. */
export const postgresSkipReason: string | undefined = postgresBin()
  ? undefined
  : `PostgreSQL is not installed (no ${PG_ROOT}/*/bin/initdb; apt-get install postgresql)`;

export interface TestPostgres {
  port: number;
  /** URL of the `postgres` database (superuser `postgres`, trust authentication on loopback). */
  url: string;
  /** Creates a fresh database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server at once (as a crash would), for failure-path tests; start() brings it back. */
  kill(): void;
  start(): void;
  stop(): Promise<void>;
}

/** The user the server runs as when the tests run as root: `nobody`, or one made for it. */
function postgresUser(): { name: string; uid: number; gid: number } {
  for (const name of ['nobody', 'atlas-pg-test']) {
    const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    if (r.status === 0)
      return { name, uid: Number(r.stdout.trim()), gid: Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim()) };
  }
  execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'atlas-pg-test']);
  return postgresUser();
}

function asPostgresUser(program: string, args: string[], user: string | undefined): void {
  const [cmd, argv] = user ? ['runuser', ['-u', user, '--', program, ...args]] : [program, args];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`${program} ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
}

/** `durable`: keep fsync on (benchmarks); tests turn it off, as nothing needs to survive a power cut. */
/** durable: fsync on. statements: pg_stat_statements loaded (the cluster bench counts round trips with it). */
export async function startPostgres(settings: { durable?: boolean; statements?: boolean } = {}): Promise<TestPostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error(postgresSkipReason);
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined;
  // As root, under /tmp: a TMPDIR only root may enter would keep the server out of its own folder.
  const dir = mkdtempSync(join(owner ? '/tmp' : tmpdir(), 'atlas-pg-'));
  chmodSync(dir, 0o700);
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const runAs = owner?.name;
  const data = join(dir, 'data');
  const port = await freePort();
  asPostgresUser(
    join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    runAs,
  );
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=${settings.durable ? 'on' : 'off'} -c max_connections=200 -c shared_buffers=16MB${settings.statements ? ' -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on' : ''}`;
  const pgCtl = (args: string[]) => asPostgresUser(join(bin, 'pg_ctl'), ['-D', data, ...args], runAs);
  const start = () => pgCtl(['-o', options, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    port,
    url,
    async createDatabase(name: string): Promise<string> {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(name)}`;
    },
    kill: () => pgCtl(['-m', 'immediate', 'stop']),
    start,
    async stop(): Promise<void> {
      try {
        pgCtl(['-m', 'fast', 'stop']);
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A PostgreSQL started before the enclosing describe's tests and stopped after them; call the result inside a test. */
export function usePostgres(): () => TestPostgres {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 120_000);
  afterAll(async () => server?.stop());
  return () => {
    if (!server) throw new Error('PostgreSQL did not start (see beforeAll)');
    return server;
  };
}
