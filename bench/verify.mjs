// Receipts verified per second by `atlas verify` on a bundle of 10,000 receipts across 100 tasks.
//
// Runs against the built CLI (dist/, via `node bin/atlas.js`): `npm run bench:verify` builds first.
// The bundle is signed here with an independent implementation of the receipt format (message v2,
// BIP32 derivation, ECDSA via node:crypto/OpenSSL normalised to low-S), so the bench doubles as an
// interoperability check: every receipt must verify. Prints the end-to-end rate (one process,
// startup included) and the rate net of a one-receipt run's fixed cost. Target: >= 2,000/s.
import { execFileSync } from 'node:child_process';
import { createHash, createHmac, createPrivateKey, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HDKey } from '@scure/bip32';

const TASKS = Number(process.env.BENCH_TASKS ?? 100);
const PER_TASK = Number(process.env.BENCH_RECEIPTS_PER_TASK ?? 100);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

const hex = (n) => n.toString(16).padStart(64, '0');
const big = (buf) => BigInt(`0x${Buffer.from(buf).toString('hex')}`);

function derEncode(r, s) {
  const int = (v) => {
    let b = Buffer.from(v.toString(16).padStart(64, '0'), 'hex');
    while (b.length > 1 && b[0] === 0 && b[1] < 0x80) b = b.subarray(1);
    if (b[0] >= 0x80) b = Buffer.concat([Buffer.from([0]), b]);
    return Buffer.concat([Buffer.from([0x02, b.length]), b]);
  };
  const body = Buffer.concat([int(r), int(s)]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

function derDecode(der) {
  const rLen = der[3];
  const r = big(der.subarray(4, 4 + rLen));
  const s = big(der.subarray(6 + rLen, 6 + rLen + der[5 + rLen]));
  return { r, s };
}

/** SEC1 ECPrivateKey for secp256k1 without the public key: OpenSSL computes it. */
function privateKeyObject(d) {
  const sec1 = Buffer.concat([
    Buffer.from('302e0201010420', 'hex'),
    Buffer.from(hex(d), 'hex'),
    Buffer.from('a00706052b8104000a', 'hex'),
  ]);
  return createPrivateKey({ key: sec1, format: 'der', type: 'sec1' });
}

/** BIP32 non-hardened private child (IL out of range: next index, like @scure/bip32). */
function childPrivate(node, index) {
  for (let i = index; ; i++) {
    const data = Buffer.alloc(37);
    Buffer.from(node.publicKey).copy(data, 0);
    data.writeUInt32BE(i, 33);
    const I = createHmac('sha512', node.chainCode).update(data).digest();
    const t = big(I.subarray(0, 32));
    if (t < N) return (t + big(node.privateKey)) % N;
  }
}

function signLowS(d, message) {
  const der = sign('sha256', Buffer.from(message, 'utf8'), privateKeyObject(d));
  const { r, s } = derDecode(der);
  return derEncode(r, s > N / 2n ? N - s : s).toString('hex');
}

function makeBundle(tasks, perTask) {
  const master = HDKey.fromMasterSeed(randomBytes(32));
  const account = master.derive("m/44'/236'/0'");
  const commit = createHash('sha1').update('bench').digest('hex');
  const bundleTasks = [];
  const base = Date.parse('2026-01-17T00:00:00Z');
  for (let t = 0; t < tasks; t++) {
    const taskNode = account.deriveChild(t);
    const taskId = `task-20260117-${new Date(base + t * 1000).toISOString().slice(11, 19).replace(/:/g, '')}`;
    const receipts = [];
    for (let i = 0; i < perTask; i++) {
      const receipt = {
        receipt_id: `rcpt-${randomBytes(4).toString('hex')}`,
        step_name: 'validate',
        command: `npm test -- --shard=${i}`,
        exit_code: 0,
        started_at: '2026-01-17T14:35:00Z',
        completed_at: '2026-01-17T14:35:12Z',
        duration: '12.3s',
        stdout_hash: createHash('sha256').update(`out ${t} ${i}`).digest('hex'),
        stderr_hash: createHash('sha256').update('').digest('hex'),
        message_version: 2,
        task_id: taskId,
        git_commit: commit,
        git_dirty: false,
      };
      const completedUnix = Math.floor(Date.parse(receipt.completed_at) / 1000);
      const message = [receipt.receipt_id, receipt.command, receipt.exit_code, receipt.stdout_hash, receipt.stderr_hash, completedUnix, taskId, receipt.step_name, commit, receipt.git_dirty].join('|');
      const { receipt_id, step_name, command, exit_code, started_at, completed_at, duration, stdout_hash, stderr_hash, ...rest } = receipt;
      receipts.push({
        receipt_id, step_name, command, exit_code, started_at, completed_at, duration, stdout_hash, stderr_hash,
        key_path: `m/44'/236'/0'/${t}/${i}`,
        signature: signLowS(childPrivate(taskNode, i), message),
        ...rest,
      });
    }
    bundleTasks.push({ task_id: taskId, task_index: t, workspace_id: 'bench', receipts });
  }
  return {
    xpub: account.publicExtendedKey,
    bundle: {
      format: 'atlas-receipt-bundle',
      version: 1,
      exported_at: '2026-01-17T15:00:00Z',
      xpub: account.publicExtendedKey,
      xpub_fingerprint: account.fingerprint.toString(16).padStart(8, '0'),
      key_derivation: { purpose: 44, coin_type: 236, account: 0 },
      tasks: bundleTasks,
      artifacts: [],
    },
  };
}

function timeVerify(path, xpub, home) {
  const started = process.hrtime.bigint();
  let stdout;
  try {
    stdout = execFileSync(process.execPath, [join(ROOT, 'bin', 'atlas.js'), 'verify', path, '--xpub', xpub, '--json'], {
      env: { ...process.env, ATLAS_HOME: home },
      encoding: 'utf8',
      maxBuffer: 512 * 1024 * 1024,
    });
  } catch (error) {
    throw new Error(`atlas verify failed (exit ${error.status}): ${String(error.stderr).slice(0, 2000)}`);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, report: JSON.parse(stdout) };
}

const work = mkdtempSync(join(tmpdir(), 'atlas-bench-verify-'));
try {
  let t0 = performance.now();
  const { xpub, bundle } = makeBundle(TASKS, PER_TASK);
  const small = makeBundle(1, 1);
  const bundlePath = join(work, 'bundle.json');
  const smallPath = join(work, 'small.json');
  writeFileSync(bundlePath, JSON.stringify(bundle));
  writeFileSync(smallPath, JSON.stringify(small.bundle));
  const total = TASKS * PER_TASK;
  console.log(`signed ${total} receipts across ${TASKS} tasks in ${((performance.now() - t0) / 1000).toFixed(1)}s (fixture)`);

  const fixed = timeVerify(smallPath, small.xpub, work);
  const run = timeVerify(bundlePath, xpub, work);
  if (!run.report.ok || run.report.summary.valid !== total) {
    throw new Error(`expected ${total} valid receipts, got ${JSON.stringify(run.report.summary)}`);
  }
  const endToEnd = total / run.seconds;
  const net = (total - 1) / Math.max(1e-6, run.seconds - fixed.seconds);
  console.log(`atlas verify: ${total} receipts in ${run.seconds.toFixed(2)}s (process start ${fixed.seconds.toFixed(2)}s)`);
  console.log(`receipts verified per second: ${Math.round(endToEnd)} end to end, ${Math.round(net)} net of startup (target >= 2000)`);
  // Verification is CPU-bound and split across cores: other work on the machine shows here.
  console.log(`machine: ${availableParallelism()} cores, load average ${loadavg()[0].toFixed(2)} (1 min)`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
