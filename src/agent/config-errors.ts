// Failures of the agent that no retry can fix: its configuration is wrong, and it says so the same
// way every time. Recognised, they fail the step once, with the fix, instead of max_attempts times.

export interface ConfigurationError {
  error: string;
  hint: string;
}

const KNOWN: ReadonlyArray<{ pattern: RegExp; error: string; hint: string }> = [
  {
    pattern: /cannot be used with root\/sudo privileges/i,
    error: 'Claude Code refuses to skip permission checks when run as root',
    hint:
      'set ai.permission_mode to acceptEdits (the default) and allow what the steps need with ai.allowed_tools ' +
      '(e.g. -c \'ai.allowed_tools=["Bash(make test)"]\'), or run as another user; inside a sandbox, IS_SANDBOX=1 lifts the refusal',
  },
  {
    pattern: /option '--permission-mode <mode>' argument '[^']*' is invalid[^\n]*/i,
    error: 'Claude Code does not know the configured permission mode',
    hint: "set ai.permission_mode to one of Claude Code's modes: default, acceptEdits, plan, bypassPermissions (atlas uses acceptEdits by default)",
  },
  {
    pattern: /invalid api key|please run \/login|not logged in|authentication_error|could not resolve authentication/i,
    error: 'Claude Code is not logged in (no valid API key)',
    hint: 'run `claude` once to log in, or set ANTHROPIC_API_KEY in the environment atlas runs in',
  },
  {
    pattern: /issue with the selected model[^\n]*|not_found_error[^\n]*model[^\n]*/i,
    error: 'Claude Code cannot use the configured model',
    hint: "check ai.model (empty uses Claude Code's default), e.g. -c ai.model=sonnet",
  },
];

/** The configuration error `text` (stderr, or the agent's error result) reports, if any. */
export function configurationError(text: string): ConfigurationError | undefined {
  for (const known of KNOWN) {
    const match = known.pattern.exec(text);
    if (match) return { error: `${known.error}: ${match[0].trim()}`, hint: known.hint };
  }
  return undefined;
}
