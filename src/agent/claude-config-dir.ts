// Claude Code's own folder (sessions, settings): $CLAUDE_CONFIG_DIR, else ~/.claude, as the
// Claude Code that inherits `env` sees it.
import { homedir } from 'node:os';
import { join } from 'node:path';

export function claudeConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  return env['CLAUDE_CONFIG_DIR'] || join(env['HOME'] ?? homedir(), '.claude');
}
