#!/usr/bin/env node
// The atlas executable: loads the bundled CLI from dist/ (built by `npm run build`). CommonJS, so
// that the fast path starts without Node's ES module loader (about 6 ms of a 30 ms `hook status`);
// the full CLI is an ES module, loaded by import(). bin/atlas.js runs this file too.
'use strict';
const { existsSync, lstatSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

const args = process.argv.slice(2);
const dist = join(__dirname, '..', 'dist');
const fullCli = join(dist, 'cli.js');
// `atlas claude-hook` runs on every Claude Code tool call: its own small entry, no CLI parser.
// `atlas hook status` and `atlas checkpoint` (agents, git hooks) try the fast path first
// (src/cli/quick.ts); a line it does not understand goes to the full CLI.
const quick = (args[0] === 'hook' && args[1] === 'status') || args[0] === 'checkpoint';
const entry = args[0] === 'claude-hook' ? join(dist, 'claude-hook.cjs') : quick ? join(dist, 'quick.cjs') : fullCli;
if (!existsSync(entry)) {
  process.stderr.write(`atlas: ${entry} is missing\nhint: run \`npm run build\` in the atlas checkout first\n`);
  process.exit(2);
}
// V8's optimizing compiler (TurboFan) costs a sync of a few thousand files more than it gives: its
// code and working memory added 6-8 MB to each phase's peak at 10,000 files, and compiling cost
// more CPU than the optimized code saved (a no-op push 0.30-0.32 s of CPU with it, 0.25-0.27 s
// without). It pays past about 15,000 files (at 30,000 a no-op push took 10-20% more CPU without
// it, at 100,000 30-60%). The folder's own state tells how large its last sync was: under 3 MiB
// (about 14,000 files) a push, pull or status runs on V8's interpreter and baseline compiler only
// (docs/performance.md#workspace-sync). Decided here, before loading the CLI makes anything hot: V8
// does not optimize later what ran while it was off. Only the folder of --dir (a task's is found by
// the CLI itself): anything else keeps V8's default.
const SMALL_STATE = 3 * 1024 * 1024;
const dirAt =
  args[0] === 'sync' && ['push', 'pull', 'status'].includes(args[1]) ? args.findIndex((a) => a === '--dir' || a.startsWith('--dir=')) : -1;
if (dirAt >= 0) {
  const folder = args[dirAt] === '--dir' ? args[dirAt + 1] : args[dirAt].slice('--dir='.length);
  try {
    // Never through a link (the folder is the agent's): a link is no state, and TurboFan stays.
    const state = folder ? lstatSync(join(folder, '.sandbox-state'), { throwIfNoEntry: false }) : undefined;
    if (state?.isFile() && state.size < SMALL_STATE) require('node:v8').setFlagsFromString('--max-opt=1');
  } catch {
    // not readable: the sync says why
  }
}
// The bundle is minified; with ATLAS_DEBUG set, stack traces point at the TypeScript sources.
if (process.env.ATLAS_DEBUG) process.setSourceMapsEnabled(true);
// A rejection here (a damaged dist/) is left unhandled: Node prints its stack and exits 1.
const runFull = () => import(pathToFileURL(fullCli).href);
if (entry === fullCli) void runFull();
else if (!quick) require(entry);
else
  void require(entry)
    .runQuick(args)
    .then((done) => (done ? undefined : runFull()));
