// A sandboxed turn's start-up against the number of conversations (issue 19, defect 4): the policy
// of one conversation's turn, its sandbox wrap and a first `true`, with 1, 1,000 and 5,000 other
// conversations on disk. The policy hides the server's folder whole (one mount) instead of one
// mount per other conversation. Target: start-up at 5,000 <= 1.2x start-up at 1.
// Usage: node bench/sandbox-scale.mjs [rounds=8]
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { importBundle, ROOT, tempDir } from './lib.mjs';

const rounds = Number(process.argv[2] ?? 8);
const cache = join(ROOT, 'node_modules', '.cache', 'atlas-bench');
mkdirSync(cache, { recursive: true });
const entry = join(cache, 'sandbox-scale-entry.ts');
const src = join(ROOT, 'src');
const exports = {
  runProcess: 'exec/run-process.ts',
  ProcessGroups: 'exec/process-groups.ts',
  createSandboxExecutor: 'exec/sandbox/executor.ts',
  acquireSandbox: 'exec/sandbox/runtime.ts',
  releaseSandbox: 'exec/sandbox/runtime.ts',
  checkReadiness: 'exec/readiness.ts',
  conversationPolicy: 'server/conversations/turn-executor.ts',
  conversationFiles: 'server/conversations/conversation-store.ts',
  defaultConfig: 'config/load.ts',
};
writeFileSync(
  entry,
  Object.entries(exports)
    .map(([name, file]) => `export { ${name} } from ${JSON.stringify(join(src, file))};`)
    .join('\n'),
);
const lib = await importBundle(
  join(cache, 'sandbox-scale.mjs'),
  {
    entryPoints: [entry],
    external: ['@anthropic-ai/sandbox-runtime', 'better-sqlite3', 'pg', 'kysely'],
  },
  { require: true },
);

const readiness = await lib.checkReadiness();
if (!readiness.ready) {
  console.log('   sandbox not available here: nothing to measure');
  process.exit(process.env.CI ? 1 : 0);
}

const config = lib.defaultConfig();
const groups = new lib.ProcessGroups();
await lib.acquireSandbox([]);

/** p50 of a turn's start-up (policy, wrap, first command) with `count` conversations on disk. */
async function startup(count) {
  const home = tempDir('atlas-bench-scale-');
  for (let i = 0; i < count; i++) {
    const files = lib.conversationFiles(home, `acct${i % 10}`, `conv-${i}`);
    mkdirSync(files.workspace, { recursive: true });
    writeFileSync(files.record, '{}');
  }
  const own = lib.conversationFiles(home, 'acct0', 'conv-0');
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    const policy = await lib.conversationPolicy(home, config, 'acct0', 'conv-0');
    const executor = lib.createSandboxExecutor(policy, own.dir);
    const result = await lib.runProcess({ command: 'true', shell: true, cwd: own.workspace, groups, executor, capture: true });
    await executor.close();
    if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}: ${result.stderr}`);
    samples.push(performance.now() - t0);
  }
  rmSync(home, { recursive: true, force: true });
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)];
}

await startup(1); // warm-up: the first wrap loads the library's modules
const figures = [];
for (const count of [1, 1000, 5000]) figures.push([count, await startup(count)]);
await lib.releaseSandbox();
const base = figures[0][1];
for (const [count, ms] of figures)
  console.log(`   ${String(count).padStart(5)} conversations: turn start-up p50 ${ms.toFixed(0)} ms (${(ms / base).toFixed(2)}x of 1)`);
const ratio = figures[2][1] / base;
console.log(`   5,000 vs 1: ${ratio.toFixed(2)}x   target <= 1.2x  ${ratio <= 1.2 ? 'ok' : 'MISSED'}`);
process.exit(ratio <= 1.2 ? 0 : 1);
