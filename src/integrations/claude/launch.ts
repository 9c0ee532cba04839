// The arguments atlas adds when it launches Claude Code for an `ai` step: its hooks through
// `--settings` (no file of the user's is edited), on even where the user's settings disable
// hooks, and the marker that tells the hook atlas's stream already counts this session's tokens.
import { currentHookCommand } from './install.js';
import { launchSettings } from './settings.js';

/** `channel`: the named pipe of atlas's hook channel (sandbox mode; channel-frame.ts). */
export function claudeHookArgs(channel?: string): string[] {
  return ['--settings', launchSettings(currentHookCommand(), channel === undefined ? {} : { ATLAS_HOOK_PIPE: channel })];
}
