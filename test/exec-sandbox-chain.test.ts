// The sandbox's shorter chain of programs (runner-argv.ts): the library's wrapped line taken apart,
// the bridges left out when no host is allowed, one shell fewer when hosts are. The real sandbox
// checks that every protection stays: no network offline, only the allowed host with hosts, Unix
// sockets refused by the seccomp filter, writes only where allowed, the command's exit code.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessGroups } from '../src/exec/process-groups.js';
import { runProcess, shellQuote } from '../src/exec/run-process.js';
import { createSandboxExecutor, explainDenial } from '../src/exec/sandbox/executor.js';
import type { SandboxPolicy } from '../src/exec/sandbox/policy.js';
import { parseQuotedWords, runnerArgv } from '../src/exec/sandbox/runner-argv.js';
import { resetSandbox } from '../src/exec/sandbox/runtime.js';
import { tempDir } from './helpers/core-fixtures.js';
import { type HostServer, startHostServer } from './helpers/host-server.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';

const CMD = 'eval "$ATLAS_SANDBOX_COMMAND"';
const SOCK = '/tmp/claude-http-1.sock';
const SECCOMP = '/x/vendor/seccomp/x64/apply-seccomp';
const q = (words: string[]) =>
  words.map((w) => (/^[A-Za-z0-9_./:=@+,-]+$/.test(w) ? w : shellQuote(w).replace(/'\\''/g, `'"'"'`))).join(' ');
/** A line of the library's shape (linux-sandbox-utils.js), with hosts. */
function libraryLine(opts: { seccomp?: string; command?: string; unshareNet?: boolean; trap?: boolean } = {}): string {
  const script = [
    `socat TCP-LISTEN:3128,fork,reuseaddr UNIX-CONNECT:${SOCK} >/dev/null 2>&1 &`,
    `socat TCP-LISTEN:1080,fork,reuseaddr UNIX-CONNECT:${SOCK} >/dev/null 2>&1 &`,
    ...(opts.trap === false ? [] : ["trap 'rc=$?; kill %1 %2 2>/dev/null; exit $rc' EXIT"]),
    `${q([opts.seccomp ?? SECCOMP])} ${q(['/usr/bin/bash', '-c', opts.command ?? CMD])}`,
  ].join('\n');
  const options = [
    'bwrap',
    '--new-session',
    ...(opts.unshareNet === false ? [] : ['--unshare-net']),
    '--bind',
    SOCK,
    SOCK,
    '--setenv',
    'HTTP_PROXY',
    'http://a:b@localhost:3128',
    '--ro-bind',
    '/',
    '/',
    '--ro-bind',
    "/w/it's",
    "/w/it's",
  ];
  return q([...options, '--', '/usr/bin/bash', '-c', `/usr/bin/bash -c ${q([script])}`]);
}

describe('the wrapped line taken apart', () => {
  it('reads the library quoting back to its words, and nothing else', () => {
    expect(parseQuotedWords(`a 'b c' 'it'"'"'s' x'y'"'"z`)).toEqual(['a', 'b c', "it's", "xy'z"]);
    expect(parseQuotedWords("''")).toEqual(['']);
    for (const bad of ['a $HOME', 'a\\ b', 'a  b', 'a ', '', "'open", '"dq"', 'a;b', 'a|b', '`x`'])
      expect(parseQuotedWords(bad)).toBeUndefined();
  });

  it('offline: bubblewrap runs apply-seccomp with /bin/sh, every option kept but the bridge socket binds', () => {
    const argv = runnerArgv(libraryLine(), CMD, true, [SOCK]);
    expect(argv).toEqual([
      'bwrap',
      '--new-session',
      '--unshare-net',
      '--setenv',
      'HTTP_PROXY',
      'http://a:b@localhost:3128',
      '--ro-bind',
      '/',
      '/',
      '--ro-bind',
      "/w/it's",
      "/w/it's",
      '--',
      SECCOMP,
      '/bin/sh',
      '-c',
      CMD,
    ]);
  });

  it('with hosts: one /bin/sh starts the two listeners and becomes apply-seccomp (no second bash, no trap)', () => {
    const argv = runnerArgv(libraryLine(), CMD, false, [SOCK]);
    const end = argv.lastIndexOf('--');
    expect(argv.slice(0, end)).toContain(SOCK);
    expect(argv.slice(end + 1, end + 3)).toEqual(['/bin/sh', '-c']);
    const lines = argv[end + 3]!.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^socat TCP-LISTEN:3128,/);
    expect(lines[1]).toMatch(/^socat TCP-LISTEN:1080,/);
    expect(lines[2]).toBe(`exec '${SECCOMP}' '/usr/bin/bash' '-c' '${CMD}'`);
  });

  it('keeps the library line as it is when anything reads otherwise', () => {
    const asLine = (line: string) => ['/bin/sh', '-c', line];
    for (const offline of [true, false]) {
      for (const line of [
        libraryLine({ seccomp: '/x/not-the-filter' }),
        libraryLine({ command: 'other' }),
        libraryLine({ unshareNet: false }),
        'bwrap --unshare-net -- /usr/bin/bash -c $X',
        q(['bwrap', '--unshare-net', '--', '/usr/bin/bash', '-c', 'a b c d']),
        q(['bwrap', '--unshare-net', '--', '/usr/bin/bash', '-c', '/usr/bin/bash -c $X']),
        q(['bwrap', '--unshare-net', '--', '/usr/bin/bash', '-x', 'y']),
        q(['--', '/usr/bin/bash', '-c', 'y']),
      ]) {
        expect(runnerArgv(line, CMD, offline, [SOCK])).toEqual(asLine(line));
      }
    }
    // Without its trap line the script is not the one this knows: with hosts it stays as it is.
    expect(runnerArgv(libraryLine({ trap: false }), CMD, false, [SOCK])).toEqual(asLine(libraryLine({ trap: false })));
  });
});

describe.skipIf(skipSandbox)('the shorter chain in the real sandbox', () => {
  const base = tempDir('atlas-chain-');
  const worktree = join(base, 'worktree');
  const taskDir = join(base, 'task');
  const outside = join(base, 'outside');
  let server: HostServer;
  let port = 0;
  const policy = (extra: Partial<SandboxPolicy> = {}): SandboxPolicy => ({
    worktree,
    tmpdir: join(taskDir, 'tmp'),
    allow_write: [worktree, join(taskDir, 'tmp')],
    deny_write: [],
    deny_read: [],
    allowed_domains: [],
    ...extra,
  });
  const run = (p: SandboxPolicy, command: string) =>
    runProcess({
      command,
      shell: true,
      cwd: worktree,
      capture: true,
      groups: new ProcessGroups(),
      executor: createSandboxExecutor(p, taskDir),
    });
  // A Unix socket the seccomp filter must refuse, and a write outside the allowed folders.
  const probes = `node -e "require('net').createServer().on('error', e => { console.log('UNIX', e.code); process.exit(0) }).listen('${worktree}/s.sock', () => console.log('UNIX LISTENING'))"; touch ${outside}/x 2>/dev/null && echo WROTE; exit 5`;

  beforeAll(async () => {
    for (const d of [worktree, taskDir, outside]) mkdirSync(d, { recursive: true });
    server = await startHostServer('hello from the host');
    port = server.port;
  });
  afterAll(async () => {
    await resetSandbox();
    await server.close();
  });

  it('offline: bubblewrap is started directly, and there is no network, no Unix socket, no write outside', async () => {
    const executor = createSandboxExecutor(policy(), taskDir);
    const launch = await executor.prepare({ command: 'true', args: [], shell: true, cwd: worktree, env: process.env });
    launch.finished();
    expect(launch.command).toMatch(/bwrap$/);
    expect(launch.args.slice(launch.args.lastIndexOf('--') + 1)).toEqual([expect.stringMatching(/apply-seccomp$/), '/bin/sh', '-c', CMD]);
    expect(launch.args.some((a) => a.includes('claude-http'))).toBe(false);
    await executor.close?.();
    const result = await run(policy(), `curl -sS --max-time 5 http://127.0.0.1:${port}/ || echo NO-NETWORK; ${probes}`);
    const out = result.stdout.toString();
    expect(out).toContain('NO-NETWORK');
    expect(out).not.toContain('hello from the host');
    expect(out).toMatch(/UNIX E(PERM|ACCES)/);
    expect(out).not.toContain('WROTE');
    expect(result.exitCode).toBe(5);
    // A proxy-aware client finds no proxy offline: still explained as the network rule.
    expect(explainDenial(result.stderr.toString(), policy())).toContain('network access is limited to no host');
  });

  it('with a host allowed: it is reached through the bridge, others are not, the filter and the exit code stay', async () => {
    const allowed = policy({ allowed_domains: [`127.0.0.1:${port}`] });
    const result = await run(
      allowed,
      `curl -sS --max-time 5 http://127.0.0.1:${port}/; echo; curl -fsS --max-time 5 http://127.0.0.2:${port}/ >/dev/null 2>&1 || echo OTHER-REFUSED; ${probes}`,
    );
    const out = result.stdout.toString();
    expect(out).toContain('hello from the host');
    expect(out).toContain('OTHER-REFUSED');
    expect(out).toMatch(/UNIX E(PERM|ACCES)/);
    expect(out).not.toContain('WROTE');
    expect(result.exitCode).toBe(5);
  });
});
