// Workspace sync (issue 10): 10,000 files (~100 MB) against a local S3 server (s3rver), in one run:
// first push, no-op push, push after 1% of the files changed, pull into an empty folder, no-op
// pull; the same with `rclone sync --checksum` and `aws s3 sync` when they are installed. Every
// tool talks to the server through a byte-counting proxy, so "sent" is what crossed the wire
// (bodies and headers); atlas's own payload figure (file bytes) is printed beside it. The server's
// CPU time per phase is printed too (Linux): it runs on the same cores, and every tool pays it.
// Usage: node bench/sync.mjs [files=10000] [bytes-per-file=10240]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ATLAS, ROOT, tempDir } from './lib.mjs';

const FILES = Number(process.argv[2] ?? 10_000);
const SIZE = Number(process.argv[3] ?? 10_240);
const BUCKET = 'bench';
const work = tempDir('atlas-bench-sync-');

if (spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' }).status !== 0) process.exit(1);

// --- the server, and a proxy in front of it that counts bytes each way
const server = spawn(process.execPath, [join(ROOT, 'test', 'fixtures', 's3rver-child.mjs'), join(work, 's3'), BUCKET], {
  stdio: ['pipe', 'pipe', 'inherit'],
  env: { ...process.env, NODE_OPTIONS: '--openssl-legacy-provider' },
});
const serverPort = await new Promise((ok) => createInterface({ input: server.stdout }).once('line', (l) => ok(JSON.parse(l).port)));
const counted = { sent: 0, received: 0 };
const proxy = createServer((client) => {
  const upstream = connect(serverPort, '127.0.0.1');
  client.on('data', (d) => (counted.sent += d.length));
  upstream.on('data', (d) => (counted.received += d.length));
  client.pipe(upstream).on('error', () => client.destroy());
  upstream.pipe(client).on('error', () => upstream.destroy());
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
});
await new Promise((ok) => proxy.listen(0, '127.0.0.1', ok));
const endpoint = `http://127.0.0.1:${proxy.address().port}`;

const CREDS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1', AWS_DEFAULT_REGION: 'us-east-1' };

// --- the files: FILES random files of SIZE bytes in 100 folders
const src = join(work, 'src');
for (let i = 0; i < FILES; i++) {
  const dir = join(src, `d${String(i % 100).padStart(2, '0')}`);
  if (i < 100) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `f${i}.bin`), randomBytes(SIZE));
}
const total = FILES * SIZE;
const changedFiles = Math.max(1, Math.round(FILES / 100));
const changedBytes = changedFiles * SIZE;
const changeOnePercent = () => {
  for (let i = 0; i < changedFiles; i++) writeFileSync(join(src, `d${String((i * 97) % 100).padStart(2, '0')}`, `f${(i * 97) % FILES}.bin`), randomBytes(SIZE));
};

/** CPU time (ms) the server has used so far, from /proc; undefined elsewhere. */
function serverCpu() {
  const stat = `/proc/${server.pid}/stat`;
  if (!existsSync(stat)) return undefined;
  const fields = readFileSync(stat, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
}

/** Runs a command (asynchronously: the proxy lives in this process) and measures it. */
function timed(cmd, args, env) {
  counted.sent = 0;
  counted.received = 0;
  const cpu0 = serverCpu();
  const t0 = process.hrtime.bigint();
  return new Promise((ok, fail) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code !== 0) fail(new Error(`${cmd} ${args.join(' ')} failed (${code}): ${stderr || stdout}`));
      else ok({ ms, sent: counted.sent, received: counted.received, stdout, serverMs: cpu0 === undefined ? undefined : serverCpu() - cpu0 });
    });
  });
}

const atlasEnv = {
  ...CREDS,
  ATLAS_HOME: join(work, 'home'),
  ATLAS_SYNC_STORE: `s3://${BUCKET}/atlas`,
  ATLAS_SYNC_S3_ENDPOINT: endpoint,
  ATLAS_SYNC_S3_FORCE_PATH_STYLE: 'true',
};
const atlasRun = async (args) => {
  const r = await timed(process.execPath, [ATLAS, 'sync', ...args, '--workspace', 'bench', '--json'], atlasEnv);
  return { ...r, payload: JSON.parse(r.stdout).stats.bytes_transferred };
};

const tools = [];
function have(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.status === 0;
}

// --- the runs
const results = {};
async function phases(name, run) {
  const dest = join(work, `dest-${name}`);
  rmSync(dest, { recursive: true, force: true });
  const r = {};
  r['first push'] = await run.push();
  r['no-op push'] = await run.push();
  changeOnePercent();
  r['push after 1% changed'] = await run.push();
  r['pull into empty folder'] = await run.pull(dest);
  r['no-op pull'] = await run.pull(dest, true);
  results[name] = r;
}

// Every tool starts from the same files: the 1% change is made again for each, on fresh copies.
const pristine = join(work, 'pristine');
execFileSync('cp', ['-a', src, pristine]);
const reset = () => {
  rmSync(src, { recursive: true, force: true });
  execFileSync('cp', ['-a', pristine, src]);
};

console.log(`${FILES} files of ${SIZE} bytes (${(total / 1e6).toFixed(0)} MB), 1% = ${changedFiles} files (${(changedBytes / 1e6).toFixed(2)} MB), s3rver on 127.0.0.1`);
await phases('atlas', {
  push: () => atlasRun(['push', '--dir', src]),
  // --force: a real comparison with the store (without it a fresh folder is not even checked).
  pull: (dest, again) => atlasRun(['pull', '--dir', dest, ...(again ? ['--force'] : [])]),
});
tools.push('atlas');

if (have('rclone', ['version'])) {
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
  const rclone = (from, to) => timed('rclone', ['sync', '--checksum', '--s3-no-check-bucket', '--transfers', '8', '--checkers', '16', from, to], env);
  await phases('rclone', { push: () => rclone(src, `bench:${BUCKET}/rclone`), pull: (dest) => rclone(`bench:${BUCKET}/rclone`, dest) });
  tools.push('rclone');
} else console.log('rclone is not installed: its column is skipped (apt-get install rclone)');

if (have('aws', ['--version'])) {
  reset();
  const env = { ...CREDS, AWS_REQUEST_CHECKSUM_CALCULATION: 'when_required', AWS_RESPONSE_CHECKSUM_VALIDATION: 'when_required', AWS_EC2_METADATA_DISABLED: 'true' };
  const aws = (from, to) => timed('aws', ['--endpoint-url', endpoint, 's3', 'sync', '--only-show-errors', from, to], env);
  await phases('aws', { push: () => aws(src, `s3://${BUCKET}/aws`), pull: (dest) => aws(`s3://${BUCKET}/aws`, dest) });
  tools.push('aws');
} else console.log('aws (awscli) is not installed or does not run: its column is skipped (apt-get install awscli)');

// --- the table
const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;
const secs = (ms) => `${(ms / 1000).toFixed(2)} s`;
console.log('');
const cell = (r) => `${secs(r.ms)} / ${mb(r.sent)}${r.serverMs === undefined ? '' : ` / ${secs(r.serverMs)}`}`;
console.log(['phase'.padEnd(24), ...tools.map((t) => `${t} time / sent${results.atlas['first push'].serverMs === undefined ? '' : ' / server CPU'}`.padEnd(38))].join(''));
for (const phase of Object.keys(results.atlas)) {
  console.log([phase.padEnd(24), ...tools.map((t) => cell(results[t][phase]).padEnd(38))].join(''));
}
console.log('');
const a = results.atlas;
const verdict = (ok) => (ok ? 'ok' : 'MISSED');
for (const phase of ['no-op push', 'no-op pull']) {
  const parts = [];
  if (results.aws) {
    const x = results.aws[phase].ms / a[phase].ms;
    parts.push(`${x.toFixed(1)}x faster than aws s3 sync (target >= 5x: ${verdict(x >= 5)})`);
  }
  if (results.rclone) {
    const x = results.rclone[phase].ms / a[phase].ms;
    parts.push(`${x.toFixed(1)}x faster than rclone --checksum (target > 1x: ${verdict(x > 1)})`);
  }
  console.log(`atlas ${phase}: ${secs(a[phase].ms)}; ${parts.join('; ') || 'no reference tool to compare with'}`);
}
const push1 = a['push after 1% changed'];
console.log(
  `atlas push after 1% changed: ${mb(push1.payload)} of file content sent for ${mb(changedBytes)} changed = ${(push1.payload / changedBytes).toFixed(3)}x (target <= 1.1x: ${verdict(push1.payload <= 1.1 * changedBytes)}); ` +
    `${mb(push1.sent)} on the wire with the HTTP requests, ${FILES - changedFiles} of them server-side copies of unchanged files`,
);

proxy.close();
server.kill('SIGTERM');
rmSync(work, { recursive: true, force: true });
