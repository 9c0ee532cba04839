// Configuration every git process atlas runs gets on its command line (which wins over every
// config file, and reaches the git processes git itself starts). A task's tree may hold a
// submodule its agent made, with a config of the agent's choosing: atlas's own git must not run
// that config's commands. core.fsmonitor names a program git runs on every status; with
// diff.ignoreSubmodules=dirty, git does not run status inside submodules at all (a submodule at
// another commit still shows; its uncommitted edits are what atlas saves separately, see
// src/recovery/save-submodules.ts).
export const SAFE_GIT_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['core.fsmonitor', 'false'],
  ['diff.ignoreSubmodules', 'dirty'],
];

/** `env` with SAFE_GIT_CONFIG added through GIT_CONFIG_COUNT (after any entries it already has). */
export function withSafeGitConfig(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const given = Number.parseInt(env['GIT_CONFIG_COUNT'] ?? '0', 10);
  const start = Number.isInteger(given) && given > 0 ? given : 0;
  const out: NodeJS.ProcessEnv = { ...env, GIT_CONFIG_COUNT: String(start + SAFE_GIT_CONFIG.length) };
  SAFE_GIT_CONFIG.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${start + i}`] = key;
    out[`GIT_CONFIG_VALUE_${start + i}`] = value;
  });
  return out;
}

/** The same as `-c key=value` arguments (simple-git's `config` option). */
export function safeGitConfigArgs(): string[] {
  return SAFE_GIT_CONFIG.map(([key, value]) => `${key}=${value}`);
}
