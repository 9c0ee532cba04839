#!/usr/bin/env node
// The atlas executable: loads the bundled CLI from dist/ (built by `npm run build`).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
// `atlas claude-hook` runs on every Claude Code tool call: its own small entry, no CLI parser.
// `atlas hook status` and `atlas checkpoint` (agents, git hooks) try the fast path first
// (src/cli/quick.ts); a line it does not understand goes to the full CLI.
const quick = (args[0] === 'hook' && args[1] === 'status') || args[0] === 'checkpoint';
const entry = new URL(
  args[0] === 'claude-hook' ? '../dist/claude-hook.cjs' : quick ? '../dist/quick.cjs' : '../dist/cli.js',
  import.meta.url,
);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(`atlas: ${fileURLToPath(entry)} is missing\nhint: run \`npm run build\` in the atlas checkout first\n`);
  process.exit(2);
}
// The bundle is minified; with ATLAS_DEBUG set, stack traces point at the TypeScript sources.
if (process.env.ATLAS_DEBUG) process.setSourceMapsEnabled(true);
if (!quick || !(await createRequire(import.meta.url)(fileURLToPath(entry)).runQuick(args))) {
  await import(quick ? new URL('../dist/cli.js', import.meta.url).href : entry.href);
}
