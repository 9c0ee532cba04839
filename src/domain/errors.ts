// Errors that reach the user carry an exit code and the fix. Documented in docs/exit-codes.md.

export const EXIT = {
  ok: 0,
  /** The task failed, a receipt is invalid, a policy is unmet. */
  failure: 1,
  /** Bad flags or arguments, unreadable or malformed input (hook.json, template, bundle). */
  input: 2,
  /** Key problem: missing, unreadable, wrong permissions, wrong xpub. */
  key: 3,
  /** Nothing to act on: no such task, template or workspace; no task for this directory. */
  notFound: 4,
  /** The task stopped and is waiting for a person (approval, manual recovery). */
  waiting: 5,
  /**
   * A push from a folder behind the store changed files the store's newer version changed too: it
   * was stored as a version that is not the newest (docs/sync.md#behind-the-store).
   */
  conflict: 6,
  /** Stopped by Ctrl+C or SIGTERM; the task can be continued with `atlas recover`. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class AtlasError extends Error {
  override name = 'AtlasError';
  readonly exitCode: ExitCode;
  /** What the user should do about it. */
  readonly hint: string | undefined;

  constructor(message: string, options: { exitCode?: ExitCode; hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = options.exitCode ?? EXIT.failure;
    this.hint = options.hint;
  }
}
