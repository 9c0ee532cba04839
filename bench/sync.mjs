// Workspace sync (issues 10, 20): FILES files of SIZE bytes against a local S3 server (s3rver), in
// one run: first push, no-op push, push after 1% of the files changed, pull into an empty folder,
// no-op pull, pull of the older version; the same work with `rclone sync --checksum`, `aws s3 sync`
// and `restic backup`/`restore` (a repository on the same server; restic 0.14 fails against
// s3rver, and then restic and atlas run again against moto's S3, as "(moto)" columns) when they are
// installed ("not installed" otherwise). Every tool talks to the server through a counting proxy, so "sent"
// is what crossed the wire (bodies and headers) and "requests" the HTTP requests it made; atlas's
// own payload figure (file bytes) and its peak RSS are printed beside them, and the figures are
// checked against issue 20's targets. Beside atlas's peaks: the floor under them, atlas's command on
// one file and the same I/O in a bare Node.js program (bench/sync-floor.mjs).
// Usage: node bench/sync.mjs [files=10000] [bytes-per-file=10240]
// BENCH_SYNC_TOOLS=atlas,rclone runs only those (atlas always runs; restic brings "atlas (moto)").
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ATLAS, ROOT, tempDir } from './lib.mjs';
import { printReport } from './sync-report.mjs';

const FILES = Number(process.argv[2] ?? 10_000);
const SIZE = Number(process.argv[3] ?? 10_240);
const BUCKET = 'bench';
const TOOL_TIMEOUT_MS = Math.max(Number(process.env.BENCH_TOOL_TIMEOUT ?? 180), FILES / 25) * 1000;
const work = tempDir('atlas-bench-sync-');
const benchStarted = Date.now();
const only = process.env.BENCH_SYNC_TOOLS?.split(',').map((t) => t.trim());
const wanted = (tool) => only === undefined || only.includes(tool);

if (spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' }).status !== 0) process.exit(1);

// --- the server, and a proxy in front of it that counts bytes and requests
const server = spawn(process.execPath, [join(ROOT, 'test', 'fixtures', 's3rver-child.mjs'), join(work, 's3'), BUCKET], {
  stdio: ['pipe', 'pipe', 'inherit'],
  env: { ...process.env, NODE_OPTIONS: '--openssl-legacy-provider' },
});
const serverPort = await new Promise((ok) => createInterface({ input: server.stdout }).once('line', (l) => ok(JSON.parse(l).port)));
const counted = { sent: 0, received: 0, requests: 0 };
// A request line (on a kept-alive connection it follows the previous body directly; the files are
// random bytes, which never hold one); the tail of the previous chunk is kept so that a line split
// between two chunks is still seen once.
const REQUEST_LINE = /(?:GET|PUT|POST|HEAD|DELETE) \/\S* HTTP\/1\.[01]\r\n/g;
/** A counting proxy in front of a server on 127.0.0.1:`port`; every tool talks through one. */
async function countingProxy(port) {
  const proxy = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    let tail = '';
    client.on('data', (d) => {
      counted.sent += d.length;
      const text = tail + d.toString('latin1');
      const before = tail.length;
      for (const m of text.matchAll(REQUEST_LINE)) if (m.index + m[0].length > before) counted.requests++;
      tail = text.slice(-96);
    });
    upstream.on('data', (d) => (counted.received += d.length));
    client.pipe(upstream).on('error', () => client.destroy());
    upstream.pipe(client).on('error', () => upstream.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise((ok) => proxy.listen(0, '127.0.0.1', ok));
  return { proxy, endpoint: `http://127.0.0.1:${proxy.address().port}` };
}
const { proxy, endpoint } = await countingProxy(serverPort);

const CREDS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1', AWS_DEFAULT_REGION: 'us-east-1' };

// --- the files: FILES random files of SIZE bytes in 100 folders
const src = join(work, 'src');
for (let i = 0; i < FILES; i++) {
  const dir = join(src, `d${String(i % 100).padStart(2, '0')}`);
  if (i < 100) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `f${i}.bin`), randomBytes(SIZE));
}
// A file written in the second a push starts is hashed again by the next push (its mtime cannot
// tell it from a write during that push: docs/sync.md#the-state-file-sandbox-state). The files are
// made just now, so the first push waits for the next second: the no-op push measures a push after
// nothing changed, not that window (which made it 0.31 s in one run and 0.65 s in the next).
await new Promise((ok) => setTimeout(ok, 1010 - (Date.now() % 1000)));
const total = FILES * SIZE;
const changedFiles = Math.max(1, Math.round(FILES / 100));
const changedBytes = changedFiles * SIZE;
const changeOnePercent = () => {
  for (let i = 0; i < changedFiles; i++)
    writeFileSync(join(src, `d${String((i * 97) % 100).padStart(2, '0')}`, `f${(i * 97) % FILES}.bin`), randomBytes(SIZE));
};

/** CPU time (ms) the server has used so far, from /proc; undefined elsewhere. */
function serverCpu() {
  const stat = `/proc/${server.pid}/stat`;
  if (!existsSync(stat)) return undefined;
  const fields = readFileSync(stat, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
}

/** The child's peak resident memory so far (VmHWM, a high-water mark), in bytes; 0 off Linux. */
function peakRss(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Runs a command (asynchronously: the proxy lives in this process) and measures it. */
function timed(cmd, args, env) {
  counted.sent = 0;
  counted.received = 0;
  counted.requests = 0;
  const cpu0 = serverCpu();
  const t0 = process.hrtime.bigint();
  return new Promise((ok, fail) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env } });
    // A tool that hangs is stopped and reported; the bench goes on with the others.
    const limit = setTimeout(() => child.kill('SIGKILL'), TOOL_TIMEOUT_MS);
    let rss = 0;
    const poll = setInterval(() => (rss = Math.max(rss, peakRss(child.pid))), 20);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code, signal) => {
      clearInterval(poll);
      clearTimeout(limit);
      if (signal === 'SIGKILL') return fail(new Error(`${cmd} ${args.join(' ')} did not finish within ${TOOL_TIMEOUT_MS / 1000} s`));
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code !== 0) fail(new Error(`${cmd} ${args.join(' ')} failed (${code}): ${(stderr || stdout).slice(0, 500)}`));
      else
        ok({
          ms,
          sent: counted.sent,
          received: counted.received,
          requests: counted.requests,
          rss,
          stdout,
          serverMs: cpu0 === undefined ? undefined : serverCpu() - cpu0,
        });
    });
  });
}

/** atlas's environment for a store at `at` (an endpoint through a counting proxy), its home in `home`. */
const atlasEnv = (at, home) => ({
  ...CREDS,
  ATLAS_HOME: join(work, home),
  ATLAS_SYNC_STORE: `s3://${BUCKET}/atlas`,
  ATLAS_SYNC_S3_ENDPOINT: at,
  ATLAS_SYNC_S3_FORCE_PATH_STYLE: 'true',
});

/** atlas against a store at `at`, its home in `home`. */
const atlasAt = (at, home) => {
  const env = atlasEnv(at, home);
  return async (args) => {
    const r = await timed(process.execPath, [ATLAS, 'sync', ...args, '--workspace', 'bench', '--json'], env);
    const { stats } = JSON.parse(r.stdout);
    return { ...r, payload: stats.bytes_transferred, version: stats.version };
  };
};

/** The phases of atlas against one store. */
function atlasPhases(run) {
  let firstVersion;
  return {
    push: async () => {
      const r = await run(['push', '--dir', src]);
      firstVersion ??= r.version;
      return r;
    },
    // --force: a real comparison with the store (without it a fresh folder is not even checked).
    pull: (dest, again) => run(['pull', '--dir', dest, ...(again ? ['--force'] : [])]),
    older: (dest) => run(['pull', '--dir', dest, '--version', firstVersion]),
  };
}

/** A free port on 127.0.0.1. */
function freePort() {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/**
 * moto's S3 server (`python3 -m moto.server`, as test/helpers/moto.ts starts it) on 127.0.0.1 with
 * the bucket, behind a counting proxy of its own; undefined when it does not start.
 */
async function startMoto() {
  const port = await freePort();
  const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && child.exitCode === null) {
    // moto accepts unsigned requests: a PUT of the bucket's path creates it.
    const made = await fetch(`http://127.0.0.1:${port}/${BUCKET}`, { method: 'PUT' }).then(
      (r) => r.ok,
      () => false,
    );
    if (made) return { child, ...(await countingProxy(port)) };
    await new Promise((ok) => setTimeout(ok, 200));
  }
  child.kill('SIGTERM');
  return undefined;
}

function have(cmd, args) {
  return spawnSync(cmd, args, { encoding: 'utf8' }).status === 0;
}

// --- the runs
const results = {};
const tools = [];
/** Runs the phases of one tool; a tool that fails is reported and left out, never the bench's end. */
async function phases(name, run) {
  const dest = join(work, `dest-${name}`);
  rmSync(dest, { recursive: true, force: true });
  const r = {};
  try {
    r['first push'] = await run.push();
    r['no-op push'] = await run.push();
    changeOnePercent();
    r['push after 1% changed'] = await run.push();
    r['pull into empty folder'] = await run.pull(dest);
    r['no-op pull'] = await run.pull(dest, true);
    r['pull of the older version'] = run.older ? await run.older(dest) : undefined;
    results[name] = r;
    tools.push(name);
  } catch (error) {
    console.log(`${name} failed, its column is left out: ${error.message}`);
  }
}

// Every tool starts from the same files: the 1% change is made again for each, on fresh copies.
const pristine = join(work, 'pristine');
execFileSync('cp', ['-a', src, pristine]);
// The files each tool changed are moved aside, not deleted, until the end: ext4 without a journal
// (as on this machine) passes over inodes freed in the last 30 seconds when it makes a file, and a
// pull of 10,000 files into an empty folder right after as many deletions took 2-8 times as long
// (perf: the kernel's recently_deleted and find_inode_bit), a penalty for whichever tool came
// soonest after a reset.
let resets = 0;
const reset = () => {
  renameSync(src, join(work, `src-before-reset-${resets++}`));
  execFileSync('cp', ['-a', pristine, src]);
};

console.log(
  `${FILES} files of ${SIZE} bytes (${(total / 1e6).toFixed(0)} MB), 1% = ${changedFiles} files (${(changedBytes / 1e6).toFixed(2)} MB), s3rver on 127.0.0.1`,
);
// Files deleted just before this bench (an earlier bench's, or a test run's) slow the files made
// in the next 30 seconds (see reset above): the first tool's phases start once they no longer can.
await new Promise((ok) => setTimeout(ok, Math.max(0, benchStarted + 35_000 - Date.now())));
await phases('atlas', atlasPhases(atlasAt(endpoint, 'home')));

/**
 * What the memory target stands on: atlas's command on a folder of one file, and the same I/O as
 * its phases in a bare Node.js program (bench/sync-floor.mjs), each one's peak RSS.
 */
async function floors() {
  const script = join(ROOT, 'bench', 'sync-floor.mjs');
  const peak = async (cmd, args, env) => (await timed(cmd, args, env)).rss;
  const one = join(work, 'one-file');
  mkdirSync(one);
  writeFileSync(join(one, 'a.txt'), 'a');
  return {
    node: await peak(process.execPath, [script, 'idle']),
    atlas: await peak(
      process.execPath,
      [ATLAS, 'sync', 'push', '--dir', one, '--workspace', 'one-file', '--json'],
      atlasEnv(endpoint, 'home-one'),
    ),
    push: await peak(process.execPath, [script, 'push', String(serverPort), BUCKET, 'floor/', src]),
    pull: await peak(process.execPath, [
      script,
      'pull',
      String(serverPort),
      BUCKET,
      'atlas/bench/.blobs/',
      join(work, 'dest-floor'),
      String(SIZE),
    ]),
  };
}
const floor = results.atlas ? await floors() : undefined;

if (!wanted('rclone')) console.log('rclone: left out (BENCH_SYNC_TOOLS)');
else if (have('rclone', ['version'])) {
  reset();
  const env = {
    RCLONE_CONFIG_BENCH_TYPE: 's3',
    RCLONE_CONFIG_BENCH_PROVIDER: 'Other',
    RCLONE_CONFIG_BENCH_ENDPOINT: endpoint,
    RCLONE_CONFIG_BENCH_ACCESS_KEY_ID: CREDS.AWS_ACCESS_KEY_ID,
    RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY: CREDS.AWS_SECRET_ACCESS_KEY,
    RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE: 'true',
    RCLONE_CONFIG_BENCH_REGION: 'us-east-1',
    AWS_CA_BUNDLE: '',
  };
  const rclone = (from, to) =>
    timed('rclone', ['sync', '--checksum', '--s3-no-check-bucket', '--transfers', '8', '--checkers', '16', from, to], env);
  // rclone keeps no versions: "the older version" is not a thing it can pull.
  await phases('rclone', { push: () => rclone(src, `bench:${BUCKET}/rclone`), pull: (dest) => rclone(`bench:${BUCKET}/rclone`, dest) });
} else console.log('rclone: not installed, its column is skipped (apt-get install rclone)');

if (!wanted('aws')) console.log('aws: left out (BENCH_SYNC_TOOLS)');
else if (have('aws', ['--version'])) {
  reset();
  const env = {
    ...CREDS,
    AWS_REQUEST_CHECKSUM_CALCULATION: 'when_required',
    AWS_RESPONSE_CHECKSUM_VALIDATION: 'when_required',
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  const aws = (from, to) => timed('aws', ['--endpoint-url', endpoint, 's3', 'sync', '--only-show-errors', from, to], env);
  await phases('aws', { push: () => aws(src, `s3://${BUCKET}/aws`), pull: (dest) => aws(`s3://${BUCKET}/aws`, dest) });
} else console.log('aws: not installed or does not run, its column is skipped (apt-get install awscli)');

/** restic's phases against a repository at `repository`; false when they failed there. */
async function resticPhases(name, repository) {
  reset();
  const env = { ...CREDS, RESTIC_REPOSITORY: repository, RESTIC_PASSWORD: 'bench', RESTIC_CACHE_DIR: join(work, `cache-${name}`) };
  const restic = (...args) => timed('restic', ['--quiet', '--no-lock', ...args], env);
  const snapshots = [];
  try {
    await restic('init'); // asynchronously: the proxy it talks through lives in this process
  } catch (error) {
    console.log(
      `restic: could not make a repository at ${repository} (${error.message.split('\n').find((l) => /Fatal|rror/.test(l)) ?? error.message.split('\n')[0]})`,
    );
    return false;
  }
  // restic restores a snapshot whole (its absolute paths under --target), rewriting every file.
  await phases(name, {
    push: async () => {
      const r = await restic('backup', '--json', src);
      const summary = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .find((m) => m.message_type === 'summary');
      if (summary?.snapshot_id) snapshots.push(summary.snapshot_id);
      return r;
    },
    pull: (dest) => restic('restore', 'latest', '--target', dest),
    older: (dest) => restic('restore', snapshots[0], '--target', dest),
  });
  return results[name] !== undefined;
}

// restic 0.14 (Debian's) fails against s3rver (`Fatal: Unmarshal`): then restic runs against moto's
// S3, and so does atlas again, so that the two are compared on the same server ("(moto)" columns).
let resticBeside = 'atlas';
let moto;
if (!wanted('restic')) console.log('restic: left out (BENCH_SYNC_TOOLS)');
else if (!have('restic', ['version'])) console.log('restic: not installed, its column is skipped (apt-get install restic)');
else if (!(await resticPhases('restic', `s3:${endpoint}/${BUCKET}/restic`))) {
  console.log("restic: against moto's S3 instead, and atlas again beside it");
  moto = await startMoto();
  if (!moto) console.log("restic: moto's S3 server did not start (pip install 'moto[server]'), its column is skipped");
  else if (await resticPhases('restic (moto)', `s3:${moto.endpoint}/${BUCKET}/restic`)) {
    reset();
    await phases('atlas (moto)', atlasPhases(atlasAt(moto.endpoint, 'home-moto')));
    resticBeside = 'atlas (moto)';
  }
}

// --- the table
if (!printReport({ results, tools, floor, resticBeside, files: FILES, changedBytes })) process.exit(1);

moto?.proxy.close();
moto?.child.kill('SIGTERM');
proxy.close();
server.kill('SIGTERM');
