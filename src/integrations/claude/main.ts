// The bundle dist/claude-hook.cjs (bin/claude-hook.cjs runs it): `atlas claude-hook` without the
// CLI. One CommonJS file: Node loads it without the ES module loader, which alone costs a hook
// run on every Claude Code tool call about a fifth more (see bench/claude-hook.mjs).
import { enterPrivateUmask } from '../../store/private-umask.js';
import { runClaudeHook } from './entry.js';

enterPrivateUmask();

void runClaudeHook().then((code) => {
  process.exitCode = code;
});
