// `npm run bench`: every speed and memory figure atlas promises, one bench after another (run
// sequentially so they don't compete for the two cores). Each prints its own figures and targets.
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';

const benches = [
  ['core: hook status and checkpoint (issue 2)', 'core.mjs'],
  ['receipt verification rate; in-toto attestations exported and verified (issues 4, 40)', 'verify.mjs'],
  ['git hook overhead on git commit (issue 5)', 'git-hook.mjs'],
  ['recovery hot paths (issue 3)', 'recovery.mjs'],
  ['sandbox overhead, local vs sandboxed (issue 12)', 'sandbox.mjs'],
  ['pristine validation vs validation in the worktree (issue 18)', 'pristine.mjs'],
  ["three real npm packages' suites outside atlas and under atlas start check --sandbox (issue 35)", 'real-packages.mjs'],
  ["a sandboxed task's commits crossing into the repository, verified (issue 34)", 'crossing.mjs'],
  ['status with 1,000 ended tasks vs 10 (issue 8)', 'status-ended.mjs'],
  ['conversation recording per streamed event (issue 9)', 'conversation.mjs'],
  ['lifecycle hooks and conversation readers (issue 9)', 'lifecycle.mjs'],
  [
    'atlas serve: start-up, first byte, 10, 50 and 200 concurrent conversations, beside a spawn-and-pipe floor (issues 13, 19)',
    'server.mjs',
  ],
  [
    'one chatty turn (8,000 lines) on SQLite and PostgreSQL, and 1,030 idle connections from one address: event-loop delay and /health beside the targets (issue 37)',
    'server-chatty.mjs',
  ],
  ["a sandboxed turn's start-up at 1, 1,000 and 5,000 conversations (issue 19)", 'sandbox-scale.mjs'],
  ['server state: SQLite and PostgreSQL (issue 23)', 'server-state.mjs'],
  ['one server on SQLite vs one and three on PostgreSQL (issue 23)', 'server-cluster.mjs'],
  ['three servers, one SIGKILLed midway: nothing lost (issue 23)', 'server-failover.mjs'],
  ['workspace sync against a local S3 server, with rclone, aws s3 sync and restic (issues 10, 20)', 'sync.mjs'],
  ['workspace sync under stress: torn versions with a writer, prune-during-push races (issue 36)', 'sync-stress.mjs'],
  ['claude-hook per event vs node -e 0 (issue 11), in sandbox mode too (issue 35)', 'claude-hook.mjs'],
  ['API trouble: first message about 500s, a hanging API stopped (issue 35)', 'api-trouble.mjs'],
  [
    'web board: first render of 1,000 tasks and of a 10,000-message conversation, and output on the page after a command wrote it, in Chromium (issues 21, 38)',
    'ui.mjs',
  ],
];

console.log(
  `node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}\n`,
);
let failed = 0;
for (const [title, file] of benches) {
  console.log(`== ${title}`);
  const result = spawnSync(process.execPath, [join(import.meta.dirname, file)], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed++;
    console.log(`   (${file} exited ${result.status ?? result.signal})`);
  }
  console.log('');
}
console.log(
  'The crash soaks run separately: npm run soak (200 random SIGKILLs with recovery), npm run soak:claude (50 with the real Claude Code)',
);
process.exit(failed > 0 ? 1 : 0);
