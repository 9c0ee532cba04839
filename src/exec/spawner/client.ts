// The server's side of the spawner (spawner.py or main.ts): starts it with the server, hands it each process to
// start, and matches the stream connections on its Unix socket to the processes. When the spawner
// dies, the processes it had started are stopped (group SIGKILL) and reported killed, it is started
// again, and meanwhile (or for good, after MAX_DEATHS deaths within DEATH_WINDOW_MS) this process
// spawns them itself; each change is said through `note`.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findSetpriv } from '../parent-death.js';
import { localSpawner } from '../spawn-here.js';
import type { ProcessExecutor, ProcessSpawner, SpawnedChild, SpawnSpec } from '../types.js';
import {
  findPython,
  type HelperProcess,
  type SpawnerRuntime,
  spawnerEntry,
  spawnerScript,
  startNodeHelper,
  startPythonHelper,
} from './helper-process.js';
import { HEADER_BYTES, KEY_BYTES, readHeader, type SpawnerMessage } from './protocol.js';
import { RemoteChild } from './remote-child.js';

export { spawnerEntry } from './helper-process.js';

const MAX_DEATHS = 3;
const DEATH_WINDOW_MS = 60_000;
export interface SpawnerOptions {
  /** Told when the spawner dies, restarts, or is given up (the server logs it). */
  note?: (text: string) => void;
  /**
   * Which spawner: spawner.py under Python, or main.ts under Node.js (server.spawner). Default:
   * Python where python3 is installed, and Node.js when it is missing or its spawner cannot start.
   */
  runtime?: SpawnerRuntime;
  /** The Node.js entry script (default: spawnerEntry()). */
  entry?: string;
  /** The Python script (default: spawnerScript()). */
  script?: string;
  /** util-linux setpriv, for the spawner's parent-death signal (default: findSetpriv()). */
  setpriv?: string | undefined;
}

export class Spawner implements ProcessSpawner {
  private helper: HelperProcess | undefined;
  private runtime: SpawnerRuntime = 'node';
  private nextId = 1;
  private readonly children = new Map<number, RemoteChild>();
  private deaths: number[] = [];
  private closed = false;
  /** Connections whose header has not come yet (closed with the spawner). */
  private readonly unnamed = new Set<Socket>();

  private constructor(
    private readonly dir: string,
    private readonly server: Server,
    private readonly options: SpawnerOptions,
  ) {}

  /** Starts the spawner; rejects when it cannot start (the caller then spawns by itself). */
  static async start(options: SpawnerOptions = {}): Promise<Spawner> {
    // A private folder (0700): only this user's processes can reach the socket.
    const dir = mkdtempSync(join(tmpdir(), 'atlas-spawner-'));
    const server = createServer({ pauseOnConnect: false }, (socket) => spawnerRef.accept(socket));
    const spawnerRef = new Spawner(dir, server, options);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(join(dir, 's'), resolve);
      });
      server.unref();
      if (options.runtime) await spawnerRef.launch(options.runtime);
      else {
        // Python where it is installed and its spawner starts; Node.js otherwise (said why when
        // python3 is there but failed).
        const failed = findPython()
          ? await spawnerRef.launch('python').then(
              () => undefined,
              (error: Error) => error.message,
            )
          : '';
        if (failed !== undefined) {
          await spawnerRef.launch('node');
          if (failed) options.note?.(`${failed}: the spawner runs under Node.js (its forks cost more CPU)`);
        }
      }
    } catch (error) {
      await spawnerRef.close();
      throw error;
    }
    return spawnerRef;
  }

  /** Whether processes start through the spawner now (false: this process spawns them itself). */
  get active(): boolean {
    return this.helper !== undefined;
  }

  /** The spawner's pid, while it runs. */
  get pid(): number | undefined {
    return this.helper?.child.pid;
  }

  /** What the spawner runs under (the last one started). */
  get runtimeName(): SpawnerRuntime {
    return this.runtime;
  }

  spawn(spec: SpawnSpec): SpawnedChild {
    const helper = this.helper;
    if (!helper) return localSpawner.spawn(spec);
    const id = this.nextId++;
    const child = new RemoteChild(spec.fd3 ? 3 : 2, randomBytes(KEY_BYTES).toString('hex'));
    this.children.set(id, child);
    child.once('close', () => this.children.delete(id));
    child.once('error', () => this.children.delete(id));
    helper.send({ t: 'spawn', id, key: child.key, ...spec }, (error) => child.fail(error));
    return child;
  }

  /** Stops the spawner (it kills what it started) and removes its socket. */
  async close(): Promise<void> {
    this.closed = true;
    const helper = this.helper;
    this.helper = undefined;
    if (helper?.connected) {
      const gone = new Promise((resolve) => helper.child.once('exit', resolve));
      // Held until it has gone: the caller's process must not end while it waits for it.
      helper.child.ref();
      helper.end();
      await gone;
    }
    for (const socket of this.unnamed) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private launch(runtime: SpawnerRuntime): Promise<void> {
    const socketPath = join(this.dir, 's');
    const setpriv = 'setpriv' in this.options ? this.options.setpriv : findSetpriv();
    let helper: HelperProcess;
    if (runtime === 'python') {
      const python = findPython();
      const script = this.options.script ?? spawnerScript();
      if (!python || !script)
        return Promise.reject(new Error(python ? 'spawner.py is missing: run npm run build' : 'python3 is not installed'));
      helper = startPythonHelper(python, script, socketPath, setpriv);
    } else {
      const entry = this.options.entry ?? spawnerEntry();
      if (!entry) return Promise.reject(new Error('the spawner is not built (dist/spawner.cjs missing): run npm run build'));
      helper = startNodeHelper(entry, socketPath, setpriv);
    }
    const child = helper.child;
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      const failed = (why: string) => {
        if (ready) return;
        child.kill('SIGKILL');
        reject(new Error(`the spawner did not start: ${why}`));
      };
      child.on('error', (error) => failed(error.message));
      child.once('exit', (code, signal) => (ready ? this.onDeath(helper, code, signal) : failed(`it exited ${signal ?? code}`)));
      helper.onMessage((m) => {
        if (ready) return this.onMessage(m);
        if (m.t !== 'ready') return failed(m.t === 'error' ? m.message : `it said ${JSON.stringify(m)}`);
        ready = true;
        // It does not keep this process alive (close() holds it while it goes).
        child.unref();
        for (const handle of [child.stdin, child.stdout, child.channel] as ({ unref?: () => void } | null | undefined)[]) handle?.unref?.();
        this.helper = helper;
        this.runtime = runtime;
        resolve();
      });
    });
  }

  private onMessage(m: SpawnerMessage): void {
    if (m.t === 'ready') return;
    const child = this.children.get(m.id);
    if (!child) return;
    if (m.t === 'spawned') child.started(m.pid);
    else if (m.t === 'exit') child.exited(m.code, m.signal);
    else child.fail(Object.assign(new Error(m.message), { code: m.code }));
  }

  /** The spawner died: what it had started is stopped and reported killed; it starts again, or not. */
  private onDeath(helper: HelperProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.helper !== helper) return;
    this.helper = undefined;
    for (const child of this.children.values()) {
      if (child.pid === undefined) {
        child.fail(new Error('the spawner died before the process started'));
        continue;
      }
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      child.exited(null, 'SIGKILL');
    }
    if (this.closed) return;
    const now = Date.now();
    this.deaths = [...this.deaths.filter((t) => now - t < DEATH_WINDOW_MS), now];
    const why = `the process spawner (pid ${helper.child.pid}) exited ${signal ?? code}; the processes it had started were stopped`;
    if (this.deaths.length >= MAX_DEATHS) {
      this.options.note?.(`${why}; it died ${this.deaths.length} times within a minute: this process starts them itself from now on`);
      return;
    }
    this.options.note?.(`${why}; restarting it (meanwhile this process starts them itself)`);
    this.launch(this.runtime).then(
      () => this.options.note?.(`the process spawner is running again (pid ${this.pid})`),
      (error: Error) => this.options.note?.(`${error.message}: this process starts them itself from now on`),
    );
  }

  /** A stream connection: its header says whose and which; the rest is the process's output. */
  private accept(socket: Socket): void {
    const chunks: Buffer[] = [];
    let length = 0;
    socket.on('error', () => undefined);
    this.unnamed.add(socket);
    socket.once('close', () => this.unnamed.delete(socket));
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length < HEADER_BYTES) return;
      this.unnamed.delete(socket);
      socket.removeListener('data', onData);
      socket.pause();
      const all = Buffer.concat(chunks);
      const header = readHeader(all);
      const child = header && this.children.get(header.id);
      if (!header || !child || header.key !== child.key || header.stream < 1 || header.stream > 3) return socket.destroy();
      if (all.length > HEADER_BYTES) socket.unshift(all.subarray(HEADER_BYTES));
      child.attach(header.stream, socket);
    };
    socket.on('data', onData);
  }
}

/**
 * An executor whose processes the spawner starts (the executor still decides what is run). While
 * the spawner is not running, `fallback` prepares them (started by this process), if given.
 */
export function withSpawner(executor: ProcessExecutor, spawner: Spawner | undefined, fallback = executor): ProcessExecutor {
  if (!spawner) return fallback;
  return {
    mode: executor.mode,
    prepare: async (spec) => (spawner.active ? { ...(await executor.prepare(spec)), spawner } : fallback.prepare(spec)),
    beginStep: executor.beginStep ? () => executor.beginStep!() : undefined,
    close: executor.close ? () => executor.close!() : undefined,
  };
}
