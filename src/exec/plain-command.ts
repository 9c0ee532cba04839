// A command line that /bin/sh would only split into words starts as those words, without the
// shell: `sh -c` forks and execs the program after starting itself, about 0.6 ms of CPU on every
// agent start here (a server starts one per turn). Only lines the shell would not interpret take
// this way: plain words, single quotes and backslash escapes (what shellQuote writes), a program
// found as sh would find it that the kernel can run itself (a binary or a `#!` script), never a
// builtin, a keyword or an assignment. Anything else, or a program not found, keeps the shell,
// which also keeps its own messages (`not found`, exit 127).
import { closeSync, openSync, readSync, realpathSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { findCommandProgram, findExecutable } from '../agent/find-executable.js';

/** Characters a word may hold unquoted with no meaning to the shell. */
const PLAIN = /[A-Za-z0-9_@%+=:,./-]/;

/**
 * Words /bin/sh runs itself (dash's special and regular builtins, reserved words): no program
 * file, or one that differs (echo). Also what a receipt names no executable for (engine/command-executable.ts).
 */
export const SHELL_OWN: ReadonlySet<string> = new Set(
  (
    '! { } ( ) [ . : alias bg break case cd chdir command continue do done echo elif else esac eval exec exit export false fc fg ' +
    'fi for getopts hash if in jobs kill local printf pwd read readonly return set shift test then times trap true type ulimit ' +
    'umask unalias unset until wait while'
  ).split(' '),
);

/** The words of `line` as /bin/sh splits them, when that is all the shell would do with it; else undefined. */
export function plainWords(line: string): string[] | undefined {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === ' ' || c === '\t') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '\\') {
      const next = line[i + 1];
      if (next === undefined || next === '\n') return undefined;
      word = (word ?? '') + next;
      i++;
    } else if (PLAIN.test(c)) word = (word ?? '') + c;
    else return undefined;
  }
  if (word !== undefined) words.push(word);
  const program = words[0];
  // An assignment (`A=b cmd`) or a word only the shell knows: the shell's.
  if (program === undefined || program.includes('=') || SHELL_OWN.has(program)) return undefined;
  return words;
}

/**
 * Whether the kernel execs `path` (executable already) itself: an ELF binary, or a `#!` script
 * whose interpreter is there. sh would run any other file as a script, and report a missing
 * interpreter in its own words.
 */
function kernelRuns(path: string): boolean {
  const head = Buffer.alloc(256);
  let n: number;
  try {
    const fd = openSync(path, 'r');
    try {
      n = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
  if (n >= 4 && head.toString('latin1', 0, 4) === '\x7fELF') return true;
  if (n < 2 || head[0] !== 0x23 || head[1] !== 0x21) return false;
  const newline = head.indexOf(0x0a);
  // A first line longer than the head, or no newline at all: the shell's to judge.
  if (newline < 0 || newline >= n) return false;
  const interpreter = head.toString('latin1', 2, newline).trim().split(/[ \t]/)[0] ?? '';
  return isAbsolute(interpreter) && findExecutable(interpreter) !== undefined;
}

/** sh finds the program and the kernel starts it as it is (PATH entries all absolute: an empty or relative one sh reads from the folder). */
function startsDirectly(program: string, env: NodeJS.ProcessEnv, cwd: string): boolean {
  if (!program.includes('/') && (env['PATH'] === undefined || env['PATH'].split(':').some((d) => !isAbsolute(d)))) return false;
  const path = findCommandProgram(program, cwd, env);
  return path !== undefined && kernelRuns(path);
}

export interface DirectStart {
  /** As given: a name on PATH, or a path (relative to the folder). */
  program: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

/**
 * `sh -c line` in `cwd` as a direct start of the same program and arguments, when the shell would
 * add nothing; else undefined. The environment gets PWD as sh exports it (the folder's real path,
 * unless the given PWD already names that folder).
 */
export function withoutShell(line: string, env: NodeJS.ProcessEnv, cwd: string): DirectStart | undefined {
  const words = plainWords(line);
  if (!words) return undefined;
  // Checked here, found again by the start itself (libuv searches the child's PATH, as sh does):
  // the program keeps the name it was given as its argv[0], as under sh.
  if (!startsDirectly(words[0]!, env, cwd)) return undefined;
  let here: string;
  try {
    here = realpathSync.native(cwd);
  } catch {
    return undefined;
  }
  let pwd = here;
  try {
    if (env['PWD'] && isAbsolute(env['PWD']) && realpathSync.native(env['PWD']) === here) pwd = env['PWD'];
  } catch {
    // A PWD that names nothing: sh replaces it too.
  }
  return { program: words[0]!, args: words.slice(1), env: { ...env, PWD: pwd } };
}
