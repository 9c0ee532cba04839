// The parent-death launcher: a process started through it is SIGKILLed by the kernel when the
// process that started it dies; without setpriv the launch is left as it was.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { localExecutor } from '../src/exec/local.js';
import { diesWithParent, dieWithParent, findSetpriv } from '../src/exec/parent-death.js';

const base = { command: 'echo', args: ['a b'], shell: false, env: {}, finished: () => undefined };

describe('dieWithParent', () => {
  it('puts setpriv --pdeathsig KILL in front of a program, and of a shell command line through /bin/sh', () => {
    expect(dieWithParent(base, '/usr/bin/setpriv')).toMatchObject({
      command: '/usr/bin/setpriv',
      args: ['--pdeathsig', 'KILL', '--', 'echo', 'a b'],
      shell: false,
    });
    expect(dieWithParent({ ...base, command: 'echo hi', args: [], shell: true }, '/usr/bin/setpriv').args).toEqual([
      '--pdeathsig',
      'KILL',
      '--',
      '/bin/sh',
      '-c',
      'echo hi',
    ]);
    expect(dieWithParent(base, '')).toBe(base);
  });

  it.skipIf(!findSetpriv())('a grandchild started through it dies when its parent is SIGKILLed', async () => {
    const executor = diesWithParent(localExecutor);
    const launch = await executor.prepare({ command: 'sleep', args: ['30'], shell: false, cwd: '/', env: process.env });
    // The parent: a node process that starts the launch and reports its pid, then waits.
    const script = `const c=require('child_process').spawn(${JSON.stringify(launch.command)},${JSON.stringify(launch.args)},{stdio:'ignore'});console.log(c.pid);setInterval(()=>{},1000);`;
    const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = Number(await new Promise<string>((r) => parent.stdout.once('data', (d) => r(String(d)))));
    expect(() => process.kill(pid, 0)).not.toThrow();
    parent.kill('SIGKILL');
    const deadline = Date.now() + 5_000;
    let alive = true;
    while (alive && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      try {
        process.kill(pid, 0);
      } catch {
        alive = false;
      }
    }
    expect(alive).toBe(false);
    expect(executor.mode).toBe('local');
  });
});
