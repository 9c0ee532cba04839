#!/usr/bin/env node
// The atlas executable: loads the bundled CLI from dist/ (built by `npm run build`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// `atlas claude-hook` runs on every Claude Code tool call: its own small entry, no CLI parser.
const entry = new URL(process.argv[2] === 'claude-hook' ? '../dist/claude-hook.cjs' : '../dist/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(`atlas: ${fileURLToPath(entry)} is missing\nhint: run \`npm run build\` in the atlas checkout first\n`);
  process.exit(2);
}
// The bundle is minified; with ATLAS_DEBUG set, stack traces point at the TypeScript sources.
if (process.env.ATLAS_DEBUG) process.setSourceMapsEnabled(true);
await import(entry.href);
