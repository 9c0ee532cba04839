// How commands talk to the user: text for people, --json for scripts (one JSON document on stdout).
import { AtlasError, EXIT } from '../domain/errors.js';
import { InvalidTransitionError } from '../domain/hook-state.js';

export interface Output {
  readonly json: boolean;
  /** A line of text for people (suppressed under --json). */
  line(text?: string): void;
  /** The command's result: JSON under --json, else the text rendering. */
  result(data: unknown, text: () => string): void;
  /** Warnings and notes go to stderr so stdout stays parseable. */
  warn(text: string): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    line(text = '') {
      if (!json) process.stdout.write(`${text}\n`);
    },
    result(data, text) {
      process.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${text()}\n`);
    },
    warn(text) {
      process.stderr.write(`atlas: warning: ${text}\n`);
    },
  };
}

/** Prints an error the way users see every error, and returns the exit code to use. */
export function reportError(error: unknown, json: boolean): number {
  let message: string;
  let hint: string | undefined;
  let code: number;
  if (error instanceof AtlasError) {
    message = error.message;
    hint = error.hint;
    code = error.exitCode;
  } else if (error instanceof InvalidTransitionError) {
    message = error.message;
    hint = 'run `atlas hook status` to see where the task is';
    code = EXIT.failure;
  } else {
    message = `unexpected error: ${error instanceof Error ? error.message : String(error)}`;
    hint = 'set ATLAS_DEBUG=1 for details, and report it with `atlas hook export` attached';
    code = EXIT.failure;
    if (process.env['ATLAS_DEBUG'] && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  }
  if (json) {
    process.stdout.write(`${JSON.stringify({ error: { message, hint, exit_code: code } }, null, 2)}\n`);
  }
  process.stderr.write(`atlas: ${message}\n${hint ? `hint: ${hint}\n` : ''}`);
  return code;
}
