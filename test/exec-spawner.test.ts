// The process spawner (src/exec/spawner/): processes started through it, as runProcess sees them,
// behave as ones this process spawns (output, input, exit codes, signals, timeouts that stop the
// whole group, the sandbox's start signal on fd 3), are the spawner's children, not this process's,
// and are stopped when the spawner dies; it is then restarted, and given up after three deaths
// within a minute, while processes still start (from this process). Each under both of its forms,
// spawner.py under Python and main.ts under Node.js. Real processes throughout.
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { localExecutor } from '../src/exec/local.js';
import { ProcessGroups } from '../src/exec/process-groups.js';
import { runProcess } from '../src/exec/run-process.js';
import { Spawner, withSpawner } from '../src/exec/spawner/client.js';
import { parseLine, requestFrame } from '../src/exec/spawner/helper-process.js';
import { streamHeader } from '../src/exec/spawner/protocol.js';
import type { ProcessExecutor } from '../src/exec/types.js';
import { tempDir } from './helpers/core-fixtures.js';
import { waitUntil } from './helpers/server-fixtures.js';

const spawners: Spawner[] = [];
afterEach(async () => {
  await Promise.all(spawners.splice(0).map((s) => s.close()));
});

let runtime: 'python' | 'node' = 'python';

async function started(notes: string[] = []): Promise<Spawner> {
  const s = await Spawner.start({ note: (n) => notes.push(n), runtime });
  expect(readFileSync(`/proc/${s.pid}/cmdline`, 'utf8')).toContain(runtime === 'python' ? 'spawner.py' : 'spawner.cjs');
  spawners.push(s);
  return s;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return false;
  }
}

/** The parent pid of a process, from /proc. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

function run(spawner: Spawner, command: string, extra: Partial<Parameters<typeof runProcess>[0]> = {}) {
  const groups = new ProcessGroups();
  return {
    groups,
    result: runProcess({
      command,
      shell: true,
      cwd: tempDir(),
      capture: true,
      groups,
      executor: withSpawner(localExecutor, spawner),
      ...extra,
    }),
  };
}

describe.each(['python', 'node'] as const)('the spawner under %s', (form) => {
  beforeEach(() => {
    runtime = form;
  });

  describe('processes started by the spawner', () => {
    it("gives their output, input and exit code as this process's own spawn does, and is their parent", async () => {
      const spawner = await started();
      expect(spawner.active).toBe(true);
      const { result } = run(spawner, 'read line; echo "got $line"; echo warn >&2; echo parent=$PPID; exit 3', { input: 'hello\n' });
      const r = await result;
      expect(r.exitCode).toBe(3);
      expect(r.signal).toBeNull();
      expect(r.stdout.toString()).toContain('got hello\n');
      expect(r.stderr.toString()).toBe('warn\n');
      // The shell's parent is the spawner: this process never forked it.
      expect(r.stdout.toString()).toContain(`parent=${spawner.pid}\n`);
    });

    it('streams large output whole and in order, straight from the process', async () => {
      const spawner = await started();
      const chunks: Buffer[] = [];
      const { result } = run(spawner, 'seq 1 200000', { onStdout: (c) => chunks.push(c) });
      const r = await result;
      expect(r.exitCode).toBe(0);
      const lines = Buffer.concat(chunks).toString().trimEnd().split('\n');
      expect(lines.length).toBe(200000);
      expect(lines[199999]).toBe('200000');
    });

    it('reports a process killed by a signal as 128 + its number', async () => {
      const spawner = await started();
      const r = await run(spawner, 'kill -TERM $$').result;
      expect(r.signal).toBe('SIGTERM');
      expect(r.exitCode).toBe(128 + 15);
    });

    it('stops the whole process group on timeout: the process and what it left in the background', async () => {
      const spawner = await started();
      const marker = `${process.pid}.7311`;
      const { result } = run(spawner, `sleep ${marker} & echo bg=$!; sleep 30`, { timeoutMs: 300 });
      const r = await result;
      expect(r.timedOut).toBe(true);
      expect(r.exitCode).toBe(124);
      const bg = Number(/bg=(\d+)/.exec(r.stdout.toString())![1]);
      await waitUntil(() => (!alive(bg) ? true : undefined), 5_000, 'the background process to be stopped with its group');
    });

    it('stops a process that wrote nothing for the stall period', async () => {
      const spawner = await started();
      const r = await run(spawner, 'echo one; sleep 30', { stall: { ms: 200, paused: () => false } }).result;
      expect(r.stalled).toBe(true);
      expect(r.stdout.toString()).toBe('one\n');
    });

    it("holds output until fd 3's start signal, as the sandbox's launches ask", async () => {
      const spawner = await started();
      const signalling: ProcessExecutor = {
        mode: 'local',
        prepare: async (spec) => ({ ...(await localExecutor.prepare(spec)), signalsStart: true }),
      };
      const r = await run(spawner, 'echo before; printf x >&3; echo after', { executor: withSpawner(signalling, spawner) }).result;
      expect(r.exitCode).toBe(0);
      expect(r.stdout.toString()).toBe('before\nafter\n');
    });

    it('rejects a program that cannot start, with the system error', async () => {
      const spawner = await started();
      await expect(run(spawner, '/nonexistent/agent', { shell: false }).result).rejects.toThrow(/ENOENT/);
      // ... and goes on starting others.
      expect((await run(spawner, 'echo ok').result).stdout.toString()).toBe('ok\n');
    });

    it('gives each process its environment and folder, the signals of a new process, and only its own stdio', async () => {
      const spawner = await started();
      const cwd = tempDir();
      // The shell's own status read by its builtins: while it waits for a child it forked, dash
      // blocks every signal, so a grep of it would race.
      const script =
        'echo "$ATLAS_T" "$PWD"; while read -r k v; do case $k in SigBlk:|SigIgn:) echo "$k $v";; esac; done < /proc/$$/status; ls /proc/$$/fd';
      const r = await run(spawner, script, { cwd, env: { ATLAS_T: 'a b=c', PATH: process.env['PATH'] } }).result;
      const [env, blocked, ignored, ...fds] = r.stdout.toString().trimEnd().split('\n');
      expect([env, blocked]).toEqual([`a b=c ${cwd}`, 'SigBlk: 0000000000000000']);
      // Nothing ignored, but for glibc's own signals 32 and 33, which its posix_spawn leaves
      // ignored (no program on glibc can use them; Rust's Command starts processes the same way).
      const internal = form === 'python' ? 0x180000000n : 0n;
      expect(BigInt(`0x${ignored!.split(' ')[1]}`) & ~internal).toBe(0n);
      // Under Python nothing beyond stdio: not what the spawner holds, nor what it inherited from
      // its caller (Node.js's spawn passes on whatever is not marked close-on-exec).
      if (form === 'python') expect(fds).toEqual(['0', '1', '2']);
      else expect(fds.slice(0, 3)).toEqual(['0', '1', '2']);
    });

    it('writes a large input whole, and starts a process that does not read its input', async () => {
      const spawner = await started();
      const input = `${'x'.repeat(3 << 20)}\n`;
      const counted = await run(spawner, 'wc -c', { input }).result;
      expect(counted.stdout.toString().trim()).toBe(String(input.length));
      const ignoring = await run(spawner, 'exec true', { input }).result;
      expect(ignoring.exitCode).toBe(0);
      expect((await run(spawner, 'echo next').result).stdout.toString()).toBe('next\n');
    });

    it('rejects a folder that does not exist and a NUL byte, with the error, and goes on', async () => {
      const spawner = await started();
      const pid = spawner.pid;
      await expect(run(spawner, 'echo x; echo y', { cwd: '/nonexistent/folder' }).result).rejects.toThrow(/ENOENT/);
      await expect(run(spawner, 'echo x; echo y', { env: { X: 'a\0b' } }).result).rejects.toThrow(/NUL|null bytes/);
      expect((await run(spawner, 'echo next').result).stdout.toString()).toBe('next\n');
      expect(spawner.pid).toBe(pid);
    });

    it('drops a connection to its socket that does not name a process it started', async () => {
      const spawner = await started();
      const socketPath = readFileSync(`/proc/${spawner.pid}/cmdline`, 'utf8').split('\0').filter(Boolean).pop()!;
      for (const header of [Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), streamHeader(999_999, 1, '00'.repeat(16))]) {
        const socket = connect(socketPath);
        socket.on('error', () => undefined);
        socket.write(header);
        await new Promise((r) => socket.once('close', r));
      }
      // One that never says who it is is closed with the spawner (its stop does not wait for it).
      const silent = connect(socketPath);
      silent.on('error', () => undefined);
      await new Promise((r) => silent.once('connect', r));
      expect((await run(spawner, 'echo still').result).stdout.toString()).toBe('still\n');
      await spawner.close();
      await new Promise((r) => silent.once('close', r));
    });
  });

  describe('when the spawner dies', () => {
    it('stops what it started, says so, starts processes itself meanwhile, and restarts', async () => {
      const notes: string[] = [];
      const spawner = await started(notes);
      const first = spawner.pid!;
      const { result, groups } = run(spawner, 'echo up; sleep 30');
      await waitUntil(() => (groups.size > 0 ? true : undefined), 10_000, 'the process to start');
      process.kill(first, 'SIGKILL');
      const r = await result;
      expect(r.signal).toBe('SIGKILL');
      expect(r.stdout.toString()).toBe('up\n');
      expect(notes[0]).toMatch(
        new RegExp(`spawner \\(pid ${first}\\) exited SIGKILL; the processes it had started were stopped; restarting`),
      );
      // While it restarts, this process starts them itself.
      const meanwhile = await run(spawner, 'read line; echo "$line parent=$PPID"', { input: 'asked\n' }).result;
      expect(meanwhile.stdout.toString()).toMatch(/^asked parent=\d+\n$/);
      await waitUntil(() => (spawner.active ? true : undefined), 10_000, 'the spawner to restart');
      expect(spawner.pid).not.toBe(first);
      expect(notes[1]).toBe(`the process spawner is running again (pid ${spawner.pid})`);
      const again = await run(spawner, 'echo parent=$PPID').result;
      expect(again.stdout.toString()).toBe(`parent=${spawner.pid}\n`);
    });

    it('is given up after three deaths within a minute: this process starts them from then on', async () => {
      const notes: string[] = [];
      const spawner = await started(notes);
      for (let death = 1; death <= 3; death++) {
        await waitUntil(() => (spawner.active ? true : undefined), 10_000, 'the spawner to run');
        process.kill(spawner.pid!, 'SIGKILL');
        await waitUntil(() => (notes.some((n) => n.includes(death === 3 ? 'died 3 times' : 'restarting')) ? true : undefined));
        if (death < 3) await waitUntil(() => (notes.length === death * 2 ? true : undefined), 10_000, 'the restart');
      }
      expect(notes.at(-1)).toMatch(/died 3 times within a minute: this process starts them itself from now on/);
      expect(spawner.active).toBe(false);
      const r = await run(spawner, 'echo parent=$PPID').result;
      expect(r.stdout.toString()).toBe(`parent=${process.pid}\n`);
      // An executor given a fallback prepares with it while the spawner is not running.
      const fallback: ProcessExecutor = { mode: 'local', prepare: (spec) => localExecutor.prepare({ ...spec, command: 'echo fallback' }) };
      const viaFallback = await run(spawner, 'echo spawner', { executor: withSpawner(localExecutor, spawner, fallback) }).result;
      expect(viaFallback.stdout.toString()).toBe('fallback\n');
    });

    it('a process started through it dies when the process that started the spawner goes (its channel to it closes)', async () => {
      const spawner = await started();
      const helper = spawner.pid!;
      const { groups } = run(spawner, 'sleep 30');
      await waitUntil(() => (groups.size > 0 ? true : undefined), 10_000, 'the process to start');
      const [pid] = [...(groups as unknown as { live: Map<number, unknown> }).live.keys()];
      expect(parentOf(pid!)).toBe(helper);
      await spawner.close();
      await waitUntil(() => (!alive(pid!) && !alive(helper) ? true : undefined), 5_000, 'the process and the spawner to end');
    });
  });

  describe('the socket the output comes in on', () => {
    it("does not let another process of this user claim a process's output by its request number", async () => {
      const spawner = await started();
      const socketPath = readFileSync(`/proc/${spawner.pid}/cmdline`, 'utf8').split('\0').filter(Boolean).pop()!;
      const { result } = run(spawner, 'echo genuine');
      // The attacker connects at once for every request number it can guess, before the spawner's
      // own connections arrive, and writes what it wants the server to take for the output.
      const attackers = [1, 2, 3, 4, 5, 6, 7, 8].map((id) => {
        const socket = connect(socketPath);
        socket.on('error', () => undefined);
        socket.end(Buffer.concat([streamHeader(id, 1, '00'.repeat(16)), Buffer.from('injected\n')]));
        return socket;
      });
      const r = await result;
      for (const s of attackers) s.destroy();
      expect(r.stdout.toString()).toBe('genuine\n');
    });
  });
});

describe('starting the spawner', () => {
  it('runs under Python where it is installed, under Node.js when asked, and says why it fell back', async () => {
    const auto = await Spawner.start();
    spawners.push(auto);
    expect(auto.runtimeName).toBe('python');
    const notes: string[] = [];
    const fellBack = await Spawner.start({ script: '/nonexistent/spawner.py', note: (n) => notes.push(n) });
    spawners.push(fellBack);
    expect(fellBack.runtimeName).toBe('node');
    expect(notes).toEqual([
      expect.stringMatching(/^the spawner did not start: it exited 2: the spawner runs under Node.js \(its forks cost more CPU\)$/),
    ]);
    const asked = await Spawner.start({ runtime: 'node' });
    spawners.push(asked);
    expect(asked.runtimeName).toBe('node');
  });

  it('reads what spawner.py says, and refuses to start on what keeps it from running', async () => {
    expect(parseLine('spawned 3 4242')).toEqual({ t: 'spawned', id: 3, pid: 4242 });
    expect(parseLine('exit 3 7 -')).toEqual({ t: 'exit', id: 3, code: 7, signal: null });
    expect(parseLine('exit 3 - SIGTERM')).toEqual({ t: 'exit', id: 3, code: null, signal: 'SIGTERM' });
    expect(parseLine('error 3 ENOENT spawn /x ENOENT')).toEqual({ t: 'error', id: 3, code: 'ENOENT', message: 'spawn /x ENOENT' });
    expect(parseLine('what')).toBeUndefined();
    const old = join(tempDir(), 'old-python.py');
    writeFileSync(old, 'import sys\nprint("unsupported Python 3.7 has no os.posix_spawn", flush=True)\nsys.exit(3)\n');
    await expect(Spawner.start({ runtime: 'python', script: old })).rejects.toThrow(
      'the spawner did not start: Python 3.7 has no os.posix_spawn',
    );
  });

  it("frames a request as spawner.py reads it: the shell's command joined as Node.js joins it", () => {
    const frame = requestFrame({
      t: 'spawn',
      id: 7,
      key: 'ab',
      command: 'echo',
      args: ['é', 'b'],
      shell: true,
      cwd: '/w',
      env: { A: '1', B: undefined },
      fd3: false,
    });
    const fields = ['7', 'ab', '/w', '/bin/sh', '0', '0', '', '3', '/bin/sh', '-c', 'echo é b', '1', 'A=1'];
    const body = fields.map((f) => `${Buffer.byteLength(f)}:${f}`).join('');
    expect(frame.toString()).toBe(`${Buffer.byteLength(body)}\n${body}`);
  });

  it('fails clearly when its entry is missing or it exits at once', async () => {
    await expect(Spawner.start({ runtime: 'node', entry: '/nonexistent/spawner.cjs' })).rejects.toThrow(
      /the spawner did not start: it exited 1/,
    );
    await expect(Spawner.start({ runtime: 'python', script: '/nonexistent/spawner.py' })).rejects.toThrow(
      /the spawner did not start: it exited 2/,
    );
  });
});
