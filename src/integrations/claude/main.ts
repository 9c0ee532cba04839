// The esbuild entry dist/claude-hook.js: bin/atlas.js runs it for `atlas claude-hook` before
// loading the CLI (commander and the rest cost more than a hook on every tool call can afford).
import { runClaudeHook } from './entry.js';

process.exitCode = await runClaudeHook();
