// The spawner under Node.js (where python3 is missing: spawner.py is the other form): a small
// helper process the server starts once and that starts its agents, so the server (a ~100 MB
// process, whose fork costs grow with its memory) never forks per turn. It loads
// no atlas module, only Node's own. Each process's stdout/stderr are connections to the server's
// Unix socket, so output never passes through here. It dies with the server: started under the
// kernel's parent-death signal (SIGTERM) where setpriv exists, or at the IPC channel's end, it kills
// every process group it started and exits.
// Usage (by the server only): node spawner.cjs SOCKET_PATH
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { type SpawnerMessage, type SpawnRequest, streamHeader } from './protocol.js';

const socketPath = process.argv[2];
const live = new Set<number>();

function say(message: SpawnerMessage): void {
  if (process.connected) process.send!(message);
}

/** One connection to the server for stream `index` of the request, its header written. */
function openStream(request: SpawnRequest, index: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath!);
    socket.once('error', reject);
    socket.once('connect', () =>
      socket.write(streamHeader(request.id, index, request.key), (error) => (error ? reject(error) : resolve(socket))),
    );
  });
}

async function start(request: SpawnRequest): Promise<void> {
  const opened = await Promise.allSettled([1, 2, ...(request.fd3 ? [3] : [])].map((i) => openStream(request, i)));
  const sockets = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
  const refuse = (error: NodeJS.ErrnoException) => {
    for (const s of sockets) s.destroy();
    say({ t: 'error', id: request.id, code: error.code, message: error.message });
  };
  const failed = opened.find((o) => o.status === 'rejected');
  if (failed) return refuse(failed.reason as NodeJS.ErrnoException);
  let child: ChildProcess;
  try {
    child = spawn(request.command, request.args, {
      cwd: request.cwd,
      env: request.env,
      shell: request.shell,
      // A new session and process group: the server signals the whole tree as one.
      detached: true,
      stdio: [request.input !== undefined ? 'pipe' : 'ignore', ...sockets],
    });
  } catch (thrown) {
    // What spawn refuses before it starts anything (a NUL byte in an argument or the environment).
    return refuse(thrown as NodeJS.ErrnoException);
  }
  // The process holds its own copies: the spawner's go, so the server sees the end when it ends.
  for (const s of sockets) s.destroy();
  child.on('error', (error: NodeJS.ErrnoException) => say({ t: 'error', id: request.id, code: error.code, message: error.message }));
  const pid = child.pid;
  if (pid === undefined) return; // 'error' follows
  live.add(pid);
  say({ t: 'spawned', id: request.id, pid });
  if (request.input !== undefined && child.stdin) {
    // The process may exit without reading its input (EPIPE): not a failure of the start.
    child.stdin.on('error', () => undefined);
    child.stdin.end(request.input);
  }
  child.on('exit', (code, signal) => {
    live.delete(pid);
    say({ t: 'exit', id: request.id, code, signal });
  });
}

process.on('message', (message: SpawnRequest) => {
  if (message?.t === 'spawn') void start(message);
});
// The server is gone (its IPC channel closed, or the parent-death signal came): nothing it started
// may outlive it.
function serverGone(): void {
  for (const pid of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  process.exit(0);
}
process.on('disconnect', serverGone);
process.on('SIGTERM', serverGone);
// Ctrl+C in the server's terminal reaches its whole process group, this process too: the server
// stops gracefully (its turns get their grace period), and this process ends with it, not before.
process.on('SIGINT', () => undefined);
say({ t: 'ready' });
