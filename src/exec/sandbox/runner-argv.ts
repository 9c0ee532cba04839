// The wrapped runner as an argument list, with a shorter chain of programs in the sandbox. The
// library returns one shell line, `bwrap <options> -- bash -c "<script>"`, where the script runs
// bash again, starts two socat listeners (the network proxy bridges' in-sandbox ends), traps its
// exit to stop them, and runs `apply-seccomp bash -c <command>` as a child it waits for. Each of
// those program starts costs a command a few milliseconds, many more on a loaded machine. The
// chain here keeps every bubblewrap option (mounts, namespaces, `--unshare-net`, environment) and
// the seccomp filter:
// - with hosts allowed: `bwrap <options> -- /bin/sh -c 'socat … & socat … & exec apply-seccomp
//   bash -c <command>'`: no second bash, no trap (the listeners live in bubblewrap's PID
//   namespace, which ends with its first process: apply-seccomp, which the shell became);
// - with no host allowed: `bwrap <options> -- apply-seccomp /bin/sh -c <command>`. The proxy
//   refuses every request then and `--unshare-net` already leaves the sandbox without a network:
//   the bridges protect nothing, and their sockets are not bound in.
// A line that does not read exactly as expected is run as the library wrote it.
import { basename } from 'node:path';
import { shellQuote } from '../run-process.js';

/**
 * The words of a line quoted as the sandbox library quotes: bare words of safe characters,
 * '…' segments and "'" for a single quote, separated by single spaces. Anything else (an
 * expansion, a backslash, another double-quoted text) is undefined: the line is then not taken apart.
 */
export function parseQuotedWords(line: string): string[] | undefined {
  const words: string[] = [];
  let word: string | undefined;
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === ' ') {
      if (word === undefined) return undefined;
      words.push(word);
      word = undefined;
      i++;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word = (word ?? '') + line.slice(i + 1, end);
      i = end + 1;
    } else if (line.startsWith(`"'"`, i)) {
      word = `${word ?? ''}'`;
      i += 3;
    } else if (/[A-Za-z0-9_./:=@+,%-]/.test(c)) {
      word = (word ?? '') + c;
      i++;
    } else {
      return undefined;
    }
  }
  if (word === undefined) return undefined;
  words.push(word);
  return words;
}

/** `--bind <socket> <socket>` of the bridges, out of bubblewrap's options. */
function withoutSocketBinds(options: string[], sockets: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < options.length; i++) {
    if (options[i] === '--bind' && sockets.includes(options[i + 1]!) && options[i + 2] === options[i + 1]) {
      i += 2;
      continue;
    }
    out.push(options[i]!);
  }
  return out;
}

/** The library's in-sandbox bridge listeners, one line each. */
const SOCAT_LINE = /^\S*socat TCP-LISTEN:\d+,fork,reuseaddr UNIX-CONNECT:\S+ >\/dev\/null 2>&1 &$/;

/**
 * The program and arguments that run `command` as `wrapped` does, through the chain above.
 * `offline`: the policy allows no host; `sockets`: the bridges' sockets (bound in only for hosts).
 */
export function runnerArgv(wrapped: string, command: string, offline: boolean, sockets: readonly string[]): string[] {
  const asLine = ['/bin/sh', '-c', wrapped];
  const argv = parseQuotedWords(wrapped);
  const end = argv?.lastIndexOf('--') ?? -1;
  // bwrap's (or the args-file launcher's) words, then `-- <shell> -c <script>`.
  if (!argv || end < 1 || argv.length !== end + 4 || argv[end + 2] !== '-c' || !argv.includes('--unshare-net')) return asLine;
  const script = parseQuotedWords(argv[end + 3]!);
  if (script?.length !== 3 || script[1] !== '-c') return asLine;
  const lines = script[2]!.split('\n');
  const last = parseQuotedWords(lines[lines.length - 1]!);
  if (last?.length !== 4 || basename(last[0]!) !== 'apply-seccomp' || last[2] !== '-c' || last[3] !== command) return asLine;
  const [seccomp, shell] = [last[0]!, last[1]!];
  const options = argv.slice(0, end);
  if (offline) return [...withoutSocketBinds(options, sockets), '--', seccomp, '/bin/sh', '-c', command];
  const listeners = lines.slice(0, -1).filter((line) => SOCAT_LINE.test(line));
  if (listeners.length !== 2 || lines.length !== 4 || !lines[2]!.startsWith('trap ')) return asLine;
  return [
    ...options,
    '--',
    '/bin/sh',
    '-c',
    [...listeners, `exec ${[seccomp, shell, '-c', command].map(shellQuote).join(' ')}`].join('\n'),
  ];
}
