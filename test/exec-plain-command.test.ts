// A shell line that /bin/sh would only split into words starts without the shell (one fork and
// exec fewer per agent start): the same program, arguments, exit codes and PWD, real processes.
// Anything the shell would interpret, or a program sh would not find or the kernel cannot run,
// keeps the shell and its own messages.
import { chmodSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localExecutor } from '../src/exec/local.js';
import { plainWords, withoutShell } from '../src/exec/plain-command.js';
import { ProcessGroups } from '../src/exec/process-groups.js';
import { runProcess, shellQuote } from '../src/exec/run-process.js';
import { tempDir } from './helpers/core-fixtures.js';

const PATH = '/usr/local/bin:/usr/bin:/bin';

function script(dir: string, name: string, text: string, mode = 0o755): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

describe('plainWords', () => {
  it('splits plain words, single quotes and backslash escapes as sh does', () => {
    expect(plainWords('/bin/bash agent.sh --flag=1')).toEqual(['/bin/bash', 'agent.sh', '--flag=1']);
    expect(plainWords('  my-agent\t a,b:c@d%e+f ')).toEqual(['my-agent', 'a,b:c@d%e+f']);
    const prompt = `it's $HOME; rm -rf * | "x" \`y\`\nz`;
    expect(plainWords(`my-agent --message ${shellQuote(prompt)}`)).toEqual(['my-agent', '--message', prompt]);
    expect(plainWords("agent '' x''y a\\ b")).toEqual(['agent', '', 'xy', 'a b']);
  });

  it('leaves to the shell whatever it would interpret', () => {
    for (const line of [
      'agent $HOME',
      'agent "quoted"',
      'agent | cat',
      'agent > out',
      'agent; other',
      'agent && other',
      'agent *.txt',
      'agent ~/x',
      'agent # comment',
      'agent `x`',
      'agent (x)',
      "agent 'unterminated",
      'agent \\',
      'agent \\\nnext',
      'A=b agent',
      'echo hi',
      'cd /tmp',
      'exec agent',
      'if',
      '',
      '   ',
    ])
      expect(plainWords(line), line).toBeUndefined();
  });
});

describe('withoutShell', () => {
  it('finds the program on PATH or by its path, as sh would, with PWD set to the folder', () => {
    const dir = tempDir('atlas-plain-');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    script(bin, 'agent', '#!/bin/sh\necho hi\n');
    const direct = withoutShell("agent 'a b'", { PATH: `${bin}:${PATH}`, PWD: '/' }, dir);
    expect(direct).toEqual({ program: 'agent', args: ['a b'], env: { PATH: `${bin}:${PATH}`, PWD: realpathSync(dir) } });
    expect(withoutShell('./bin/agent', { PATH }, dir)?.program).toBe('./bin/agent');
    expect(withoutShell('bash -c x', { PATH }, dir)).toMatchObject({ program: 'bash', args: ['-c', 'x'] });
    // A PWD naming the folder by another path (a link) is kept, as sh keeps it.
    const link = join(tempDir('atlas-plain-link-'), 'here');
    symlinkSync(dir, link);
    expect(withoutShell('bash', { PATH, PWD: link }, dir)?.env['PWD']).toBe(link);
    expect(withoutShell('bash', { PATH, PWD: join(dir, 'gone') }, dir)?.env['PWD']).toBe(realpathSync(dir));
  });

  it('keeps the shell for a program it would not find, or one the kernel cannot run itself', () => {
    const dir = tempDir('atlas-plain-');
    script(dir, 'no-shebang', 'echo hi\n');
    script(dir, 'not-executable', '#!/bin/sh\necho hi\n', 0o644);
    script(dir, 'missing-interpreter', '#!/nowhere/sh\necho hi\n');
    script(dir, 'relative-interpreter', '#!sh\necho hi\n');
    script(dir, 'no-newline', `#!/bin/sh ${'x'.repeat(300)}`);
    mkdirSync(join(dir, 'folder'));
    for (const line of [
      './no-shebang',
      './not-executable',
      './missing-interpreter',
      './relative-interpreter',
      './no-newline',
      './folder',
      './absent',
    ])
      expect(withoutShell(line, { PATH }, dir), line).toBeUndefined();
    // A file of that name it cannot run is passed over, as sh passes it over; no other one on PATH: the shell's.
    expect(withoutShell('not-executable', { PATH: `${dir}:${PATH}` }, dir)).toBeUndefined();
    expect(withoutShell('no-such-program-here', { PATH }, dir)).toBeUndefined();
    // No PATH, or one with a relative entry: sh's own rules apply.
    expect(withoutShell('bash', {}, dir)).toBeUndefined();
    expect(withoutShell('bash', { PATH: `bin:${PATH}` }, dir)).toBeUndefined();
    expect(withoutShell('bash', { PATH: `:${PATH}` }, dir)).toBeUndefined();
    expect(withoutShell('bash', { PATH }, join(dir, 'absent'))).toBeUndefined();
    expect(withoutShell('bash | cat', { PATH }, dir)).toBeUndefined();
  });
});

describe('the local executor', () => {
  const run = (command: string, cwd: string, env: NodeJS.ProcessEnv = { PATH }) =>
    runProcess({ command, shell: true, cwd, env, capture: true, groups: new ProcessGroups(), input: 'the prompt' });

  it('starts a plain line without the shell: same output, stdin, exit code and PWD', async () => {
    const dir = tempDir('atlas-plain-');
    const agent = script(
      dir,
      'agent',
      '#!/bin/bash\nread -r line\necho "parent=$(cat /proc/$PPID/comm) pwd=$PWD arg=$1 stdin=$line"\nexit 3\n',
    );
    const launch = await localExecutor.prepare({
      command: `${agent} ${shellQuote("it's")}`,
      args: [],
      shell: true,
      cwd: dir,
      env: { PATH },
    });
    expect(launch).toMatchObject({ command: agent, args: ["it's"], shell: false });
    const r = await run(`${agent} ${shellQuote("it's")}`, dir);
    expect(r.exitCode).toBe(3);
    // Its parent is this process, not a shell in between.
    expect(r.stdout.toString()).toBe(`parent=node pwd=${realpathSync(dir)} arg=it's stdin=the prompt\n`);
  });

  it('finds a program on the PATH of the environment given, as sh does', async () => {
    const dir = tempDir('atlas-plain-');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    script(bin, 'my-agent', '#!/bin/sh\necho "parent=$(cat /proc/$PPID/comm) $1"\n');
    const r = await run("my-agent 'the task'", dir, { PATH: `${bin}:${PATH}` });
    expect(r).toMatchObject({ exitCode: 0 });
    expect(r.stdout.toString()).toBe('parent=node the task\n');
  });

  it('runs through the shell whatever the shell interprets, with the shell messages kept', async () => {
    const dir = tempDir('atlas-plain-');
    const viaShell = await localExecutor.prepare({ command: 'echo $0 | cat', args: [], shell: true, cwd: dir, env: { PATH } });
    expect(viaShell).toMatchObject({ command: 'echo $0 | cat', shell: true });
    expect((await run('echo $0 | cat', dir)).stdout.toString()).toBe('/bin/sh\n');
    const missing = await run('no-such-agent-anywhere --x', dir);
    expect(missing.exitCode).toBe(127);
    expect(missing.stderr.toString()).toMatch(/not found/);
  });

  it('gives a signal the same exit code with or without the shell (128 + the signal)', async () => {
    const dir = tempDir('atlas-plain-');
    const agent = script(dir, 'agent', '#!/bin/bash\nkill -TERM $$\n');
    expect((await run(agent, dir)).exitCode).toBe(143);
    expect((await run(`${agent}; exit $?`, dir)).exitCode).toBe(143);
  });
});
