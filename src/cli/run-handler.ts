// Runs one command's handler: builds the context, maps the result and errors to the exit code.
import { EXIT } from '../domain/errors.js';
import type { GlobalFlags } from './context.js';
import { CliContext } from './context.js';
import { reportError } from './output.js';

// Commander hands the parsed arguments over untyped; each handler declares its own (never[] accepts any list).
// biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing exits 0.
export type Handler = (ctx: CliContext, ...args: never[]) => Promise<number | void>;

export async function runHandler(flags: GlobalFlags, load: () => Promise<{ default: Handler }>, args: unknown[]): Promise<void> {
  const ctx = new CliContext(flags);
  try {
    const handler = (await load()).default;
    process.exitCode = (await handler(ctx, ...(args as never[]))) ?? EXIT.ok;
  } catch (error) {
    process.exitCode = reportError(error, Boolean(flags.json));
  }
}
