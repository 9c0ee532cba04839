#!/usr/bin/env node
// The atlas executable: loads the bundled CLI from dist/ (built by `npm run build`). CommonJS, so
// that the fast path starts without Node's ES module loader (about 6 ms of a 30 ms `hook status`);
// the full CLI is an ES module, loaded by import(). bin/atlas.js runs this file too.
'use strict';
const { existsSync } = require('node:fs');
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
