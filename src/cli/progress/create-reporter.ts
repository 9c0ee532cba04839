// Which progress display a run gets: live on a terminal, plain lines otherwise; under --json the
// plain lines go to stderr so stdout carries only the final JSON.
import type { Reporter } from '../../engine/contract.js';
import { PlainReporter } from './plain-reporter.js';
import { TtyReporter } from './tty-reporter.js';

export function createReporter(options: { json: boolean }): Reporter {
  if (options.json) return new PlainReporter(process.stderr);
  if (process.stdout.isTTY && process.env['TERM'] !== 'dumb') return new TtyReporter(process.stdout);
  return new PlainReporter(process.stdout);
}
