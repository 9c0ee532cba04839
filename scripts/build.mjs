// Bundles the CLI into dist/ with one chunk per command, so each command loads only what it uses
// (startup time is a product feature: `atlas hook status` must feel instant).

import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const common = {
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  // Less source for V8 to pre-parse on every start; stack traces map back via the source maps.
  minify: process.env.ATLAS_BUILD_MINIFY !== '0',
  chunkNames: 'chunks/[name]-[hash]',
  define: { ATLAS_VERSION: JSON.stringify(pkg.version) },
  // CommonJS dependencies bundled into ESM need a require().
  banner: {
    js: "import { createRequire as __atlasCreateRequire } from 'node:module'; const require = __atlasCreateRequire(import.meta.url);",
  },
  // The sandbox runtime finds its own helper binaries (seccomp filters, proxy agent) next to its
  // files: it stays in node_modules, loaded only in sandbox mode.
  // Database drivers stay in node_modules too: better-sqlite3 loads its native addon from beside its
  // own files, and pg looks for an optional native binding by name.
  external: ['@anthropic-ai/sandbox-runtime', 'better-sqlite3', 'pg'],
  logLevel: 'warning',
  // A package's ES module build where it has one: esbuild then keeps only what atlas imports. The
  // AWS SDK's CommonJS build is one module holding every S3 command; its ES build let a sync
  // command start ~90 ms sooner (docs/performance.md#workspace-sync).
  mainFields: ['module', 'main'],
};
// verify-worker: worker threads of `atlas verify` for large inputs (src/receipts/check-sets.ts).
await build({ ...common, entryPoints: { cli: 'src/cli/main.ts', 'verify-worker': 'src/receipts/verify-worker.ts' }, outdir: 'dist' });
// `atlas claude-hook` runs on every Claude Code tool call: one CommonJS file of its own, which Node
// loads without the ES module loader (bin/claude-hook.cjs; bench/claude-hook.mjs measures it).
await build({
  ...common,
  splitting: false,
  format: 'cjs',
  banner: {},
  entryPoints: ['src/integrations/claude/main.ts'],
  outfile: 'dist/claude-hook.cjs',
});
// The server's process spawner (src/exec/spawner/main.ts): a small process of Node's own modules
// only, started once with `atlas serve`, which starts the agents so the server never forks itself.
await build({
  ...common,
  splitting: false,
  format: 'cjs',
  banner: {},
  entryPoints: ['src/exec/spawner/main.ts'],
  outfile: 'dist/spawner.cjs',
});
// Its Python form, used where python3 is installed (it starts processes without a fork): a script,
// copied as is.
copyFileSync(new URL('../src/exec/spawner/spawner.py', import.meta.url), new URL('../dist/spawner.py', import.meta.url));
// `atlas hook status` and `atlas checkpoint` (src/cli/quick.ts): one CommonJS file too, not the ES
// entry and its ~25 chunks: 1.3x `node -e 0` where the full CLI takes 1.6x (bench/core.mjs). The
// yaml library (115 KB, needed only when a config file changed) stays in node_modules.
await build({
  ...common,
  splitting: false,
  format: 'cjs',
  banner: {},
  entryPoints: ['src/cli/quick-main.ts'],
  outfile: 'dist/quick.cjs',
  external: [...common.external, 'yaml'],
});
// The web board (src/ui/, served by `atlas serve` and `atlas ui`): a browser bundle in dist/ui/.
const { buildUi } = await import('./build-ui.mjs');
await buildUi();
