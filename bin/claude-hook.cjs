#!/usr/bin/env node
// `atlas claude-hook` as Claude Code runs it (see `atlas claude install`): the hook's own bundle,
// loaded as CommonJS without the CLI, because it runs on every tool call.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const entry = join(__dirname, '..', 'dist', 'claude-hook.cjs');
if (!existsSync(entry)) {
  // Exit 1: Claude Code reports it and goes on (a missing build must not block the session).
  process.stderr.write(`atlas claude-hook: ${entry} is missing; run \`npm run build\` in the atlas checkout\n`);
  process.exit(1);
}
require(entry);
