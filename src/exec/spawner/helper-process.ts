// The spawner's process, in either of its two forms: spawner.py under Python where python3 is
// installed (it starts each process with posix_spawn, no fork: about 1 ms of CPU a process against
// 7-8 ms for a fork from Node.js on a busy server), else main.ts under Node.js. Both take the same
// requests and give the same messages; each is started here and spoken to through a HelperProcess.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { outputLines } from '../../domain/output-delta.js';
import { withPersonUmask } from '../../store/private-umask.js';
import type { SpawnerMessage, SpawnRequest } from './protocol.js';

export type SpawnerRuntime = 'python' | 'node';

/** A small heap: the spawner holds nothing but the processes in flight. */
const NODE_FLAGS = ['--max-old-space-size=32', '--max-semi-space-size=1'];
/** Where python3 is looked for: fixed places, not PATH, which the server's caller decides. */
const PYTHONS = ['/usr/bin/python3', '/usr/local/bin/python3', '/bin/python3'];

export interface HelperProcess {
  readonly child: ChildProcess;
  /** Hands it a request; `failed` is told when it cannot be sent. */
  send(request: SpawnRequest, failed: (error: Error) => void): void;
  /** Each message it says. */
  onMessage(listener: (message: SpawnerMessage) => void): void;
  /** Tells it the server is going: it kills what it started and exits. */
  end(): void;
  /** Whether `end` has not been called and it has not exited. */
  readonly connected: boolean;
}

function firstFile(candidates: string[]): string | undefined {
  for (const rel of candidates) {
    const url = new URL(rel, import.meta.url);
    if (url.protocol === 'file:' && existsSync(fileURLToPath(url))) return fileURLToPath(url);
  }
  return undefined;
}

/** The built Node.js entry (dist/spawner.cjs), from dist/chunks/ or from src/exec/spawner/ (tests). */
export function spawnerEntry(): string | undefined {
  return firstFile(['../spawner.cjs', '../../../dist/spawner.cjs']);
}

/** The Python spawner (dist/spawner.py, or beside this file in the sources). */
export function spawnerScript(): string | undefined {
  return firstFile(['../spawner.py', './spawner.py']);
}

export function findPython(): string | undefined {
  return PYTHONS.find((p) => existsSync(p));
}

/**
 * Starts `program argv` as the spawner: with the person's umask (its processes get it, as processes
 * this one starts do: private-umask.ts), and, where util-linux's setpriv exists, the kernel's
 * parent-death signal (it dies with this process; its own watch of stdin or IPC besides).
 */
function launch(program: string, argv: string[], setpriv: string | undefined, ipc: boolean): ChildProcess {
  return withPersonUmask(() =>
    spawn(setpriv ?? program, setpriv ? ['--pdeathsig', 'TERM', '--', program, ...argv] : argv, {
      stdio: ipc ? ['ignore', 'ignore', 'inherit', 'ipc'] : ['pipe', 'pipe', 'inherit'],
      serialization: 'json',
    }),
  );
}

export function startNodeHelper(entry: string, socketPath: string, setpriv: string | undefined): HelperProcess {
  const child = launch(process.execPath, [...NODE_FLAGS, entry, socketPath], setpriv, true);
  return {
    child,
    send: (request, failed) =>
      child.send(request, (error: Error | null) => {
        if (error) failed(error);
      }),
    onMessage: (listener) => child.on('message', listener),
    end: () => child.disconnect(),
    get connected() {
      return child.connected;
    },
  };
}

export function startPythonHelper(python: string, script: string, socketPath: string, setpriv: string | undefined): HelperProcess {
  const child = launch(python, ['-I', '-S', script, socketPath], setpriv, false);
  let ended = false;
  child.once('exit', () => (ended = true));
  // A write after it died: the exit is what the server acts on.
  child.stdin!.on('error', () => undefined);
  return {
    child,
    send: (request, failed) => {
      // Told later, as Node.js's IPC tells: the caller listens for the failure after it asked.
      if (ended) return process.nextTick(failed, new Error('the spawner has exited'));
      try {
        child.stdin!.write(requestFrame(request));
      } catch (error) {
        process.nextTick(failed, error as Error);
      }
    },
    onMessage: (listener) =>
      readLines(child, (line) => {
        const message = parseLine(line);
        if (message) listener(message);
      }),
    end: () => {
      ended = true;
      child.stdin!.end();
    },
    get connected() {
      return !ended;
    },
  };
}

function readLines(child: ChildProcess, onLine: (line: string) => void): void {
  let pending = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (text: string) => {
    const split = outputLines(pending, text);
    pending = split.pending;
    for (const line of split.lines) onLine(line);
  });
}

/** One request as spawner.py reads it: "<length>\n" and its fields, each "<length>:<bytes>". */
export function requestFrame(request: SpawnRequest): Buffer {
  // As Node.js's spawn does with `shell`: the command and its arguments, joined, to /bin/sh -c.
  const argv = request.shell ? ['/bin/sh', '-c', [request.command, ...request.args].join(' ')] : [request.command, ...request.args];
  const env = Object.entries(request.env).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
  const fields = [
    String(request.id),
    request.key,
    request.cwd,
    argv[0]!,
    request.fd3 ? '1' : '0',
    request.input !== undefined ? '1' : '0',
    request.input ?? '',
    String(argv.length),
    ...argv,
    String(env.length),
    ...env,
  ];
  const parts = fields.flatMap((f) => {
    // As Node.js's spawn refuses them: the system cannot pass them on.
    if (f.includes('\0')) throw new TypeError('an argument, the folder or the environment of a process holds a NUL byte');
    const bytes = Buffer.from(f);
    return [Buffer.from(`${bytes.length}:`), bytes];
  });
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from(`${body.length}\n`), body]);
}

export function parseLine(line: string): SpawnerMessage | undefined {
  const words = line.split(' ');
  const [kind, id, a, b] = words;
  if (kind === 'ready') return { t: 'ready' };
  if (kind === 'spawned') return { t: 'spawned', id: Number(id), pid: Number(a) };
  if (kind === 'exit')
    return { t: 'exit', id: Number(id), code: a === '-' ? null : Number(a), signal: b === '-' ? null : (b as NodeJS.Signals) };
  if (kind === 'error') return { t: 'error', id: Number(id), code: a, message: words.slice(3).join(' ') };
  // What keeps it from starting (an old Python), said instead of "ready".
  if (kind === 'unsupported') return { t: 'error', id: 0, code: undefined, message: words.slice(1).join(' ') };
  return undefined;
}
