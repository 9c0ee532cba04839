// What of atlas's environment reaches a sandboxed process: an allow-list, not everything but a
// deny-list (a GITHUB_TOKEN, a database URL or a cloud key in the person's shell would otherwise
// be readable by every step). The names below are what a shell, a tool and the agent need; a
// template that needs more names them in execution.sandbox.env.

/**
 * The store's credentials (the AWS SDK's provider chain reads these) never enter the sandbox, not
 * even when named: a step could read or overwrite other workspaces' versions with them.
 */
export const STORE_CREDENTIAL_VARS = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_SECURITY_TOKEN',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
] as const;

/** Passed by name: the shell, locale, terminal, temp folder and certificate authorities. */
export const SANDBOX_ENV_NAMES = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TERM',
  'COLORTERM',
  'NO_COLOR',
  'FORCE_COLOR',
  'COLUMNS',
  'LINES',
  'TMPDIR',
  'TMP',
  'TEMP',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
  // Who commits (the git step's commit runs in the sandbox): an identity, not a secret.
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  // Claude Code's switches (not secrets); its API key and URL come with the ANTHROPIC_ prefix.
  'IS_SANDBOX',
  'DISABLE_AUTOUPDATER',
  'DISABLE_TELEMETRY',
  'DISABLE_ERROR_REPORTING',
  'DISABLE_NON_ESSENTIAL_MODEL_CALLS',
  'MAX_THINKING_TOKENS',
] as const;

/**
 * Passed by prefix: locale categories, atlas's own variables (ATLAS_TASK_ID, ATLAS_STEP, ...), and
 * the agent's API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ...) and Claude Code's settings.
 */
export const SANDBOX_ENV_PREFIXES = ['LC_', 'ATLAS_', 'ANTHROPIC_', 'CLAUDE_'] as const;

/** atlas's own variables that hold a secret (the server's database URL and its password). */
const ATLAS_SECRETS = /^ATLAS_(?:DATABASE_URL|SERVER_DATABASE)$|^ATLAS_.*(?:TOKEN|SECRET|PASSWORD|CREDENTIAL)/;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** What is wrong with an execution.sandbox.env entry, or undefined when it is a name we pass. */
export function sandboxEnvNameProblem(name: string): string | undefined {
  if (!NAME.test(name))
    return `${JSON.stringify(name)} is not an environment variable name (letters, digits and _, not starting with a digit)`;
  if ((STORE_CREDENTIAL_VARS as readonly string[]).includes(name))
    return `${name} is one of the store's credentials, which never enter the sandbox`;
  return undefined;
}

/** The environment a sandboxed process starts with: the allow-list and the names `extra` adds. */
export function sandboxEnvironment(env: NodeJS.ProcessEnv, extra: readonly string[] = []): NodeJS.ProcessEnv {
  const named = new Set<string>([...SANDBOX_ENV_NAMES, ...extra]);
  for (const key of STORE_CREDENTIAL_VARS) named.delete(key);
  const out: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (named.has(key) || (SANDBOX_ENV_PREFIXES.some((p) => key.startsWith(p)) && !ATLAS_SECRETS.test(key))) out[key] = value;
  }
  return out;
}
