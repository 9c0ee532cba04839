// Configuration every git process atlas runs gets on its command line (which wins over every
// config file, and reaches the git processes git itself starts). A task's tree may hold a
// submodule its agent made, with a config of the agent's choosing: atlas's own git must not run
// that config's commands. core.fsmonitor names a program git runs on every status; with
// diff.ignoreSubmodules=dirty, git does not run status inside submodules at all (a submodule at
// another commit still shows; its uncommitted edits are what atlas saves separately, see
// src/recovery/save-submodules.ts).
// core.hooksPath=/dev/null: no hook can exist below it. Attributes outside the tree are not read
// (the tree's own .gitattributes is read-only to a sandboxed step; GIT_EXTERNAL_DIFF is cleared) and
// the ext:: transport (which runs a command) is refused.
export const SAFE_GIT_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['core.fsmonitor', 'false'],
  ['diff.ignoreSubmodules', 'dirty'],
  ['core.hooksPath', '/dev/null'],
  ['core.attributesFile', '/dev/null'],
  ['protocol.ext.allow', 'never'],
];

/** `env` with SAFE_GIT_CONFIG added through GIT_CONFIG_COUNT (after any entries it already has). */
export function withSafeGitConfig(env: NodeJS.ProcessEnv, options: { hooks?: boolean } = {}): NodeJS.ProcessEnv {
  const given = Number.parseInt(env['GIT_CONFIG_COUNT'] ?? '0', 10);
  const start = Number.isInteger(given) && given > 0 ? given : 0;
  const entries = SAFE_GIT_CONFIG.filter(([key]) => !(options.hooks && key === 'core.hooksPath'));
  const out: NodeJS.ProcessEnv = { ...env, GIT_CONFIG_COUNT: String(start + entries.length) };
  entries.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${start + i}`] = key;
    out[`GIT_CONFIG_VALUE_${start + i}`] = value;
  });
  return out;
}

/**
 * The same as `-c key=value` arguments (simple-git's `config` option). `hooks`: leave
 * core.hooksPath alone, for the template's git step in local mode, where the user's hooks run.
 */
export function safeGitConfigArgs(options: { hooks?: boolean } = {}): string[] {
  return SAFE_GIT_CONFIG.filter(([key]) => !(options.hooks && key === 'core.hooksPath')).map(([key, value]) => `${key}=${value}`);
}

/** simple-git refuses these settings on the command line unless told; ours only turn things off. */
export const SIMPLE_GIT_UNSAFE = {
  allowUnsafeFsMonitor: true,
  allowUnsafeHooksPath: true,
  allowUnsafeConfigPaths: true,
  allowUnsafeProtocolOverride: true,
} as const;
