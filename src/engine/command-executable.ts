// Which program a validation command starts, for its receipt (message version 3): the first word
// of the command as /bin/sh would find it on the step's PATH. A fake `npm` earlier on PATH shows
// up as its own path. Only the first program is named: `npm test && other` records npm's path.
import { findCommandProgram } from '../agent/find-executable.js';
import { isSignableExecutable } from '../domain/receipt.js';
import { SHELL_OWN } from '../exec/plain-command.js';

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** The words of the command's start, unquoted (enough to find the first program; not a shell parser). */
function leadingWords(command: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < command.length && words.length < 64) {
    while (i < command.length && /\s/.test(command[i]!)) i++;
    if (i >= command.length) break;
    if ('(){};&|<>'.includes(command[i]!)) {
      words.push(command[i]!);
      break;
    }
    let word = '';
    while (i < command.length && !/[\s;&|<>()]/.test(command[i]!)) {
      const c = command[i]!;
      if (c === "'" || c === '"') {
        const end = command.indexOf(c, i + 1);
        if (end < 0) return words;
        word += command.slice(i + 1, end);
        i = end + 1;
      } else if (c === '\\' && i + 1 < command.length) {
        word += command[i + 1];
        i += 2;
      } else {
        word += c;
        i++;
      }
    }
    words.push(word);
    if (!ASSIGNMENT.test(word)) break;
  }
  return words;
}

/**
 * The absolute path of the program the command starts with, as found on `env.PATH` from `cwd`;
 * "" when /bin/sh runs it itself (a builtin such as `true`, a subshell) or nothing is found.
 */
export function commandExecutable(command: string, options: { cwd: string; env: NodeJS.ProcessEnv }): string {
  const first = leadingWords(command).find((w) => !ASSIGNMENT.test(w));
  if (first === undefined || first.length === 0 || SHELL_OWN.has(first) || first.includes('$') || first.includes('`')) return '';
  const path = findCommandProgram(first, options.cwd, options.env);
  return path !== undefined && isSignableExecutable(path) ? path : '';
}
