// The sandboxed executor: each process of a step runs inside the OS sandbox with the task's
// policy. The command is the same as in local mode (shell commands still run under /bin/sh, in
// the worktree); its environment is the allow-list of domain/sandbox-env.ts, with TMPDIR the task's
// own temp folder and HOME its private home (sandbox-home.ts).
import { mkdirSync } from 'node:fs';
import { sandboxEnvironment } from '../../domain/sandbox-env.js';
import { shellQuote } from '../run-process.js';
import type { Launch, LaunchSpec, ProcessExecutor } from '../types.js';
import { checkLayoutAfterCommand, looseBranchRefs } from './layout-guard.js';
import { absentStubPaths, emptyMountDirs, recordLitter, removeStubs } from './litter.js';
import type { SandboxPolicy } from './policy.js';
import { runnerArgv } from './runner-argv.js';
import { bridgeSockets, commandFinished, wrapCommand } from './runtime.js';

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/;
/** The library's NO_PROXY without loopback, for tasks that allow a service on this host's loopback. */
const NO_PROXY_WITHOUT_LOOPBACK = '169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16';

/** The command line run inside the sandbox. */
export function innerCommand(spec: Pick<LaunchSpec, 'command' | 'args' | 'shell'>, policy: SandboxPolicy): string {
  const tmp = shellQuote(policy.tmpdir);
  // First the sign that the sandbox is set up (Launch.signalsStart), on a descriptor the command never gets.
  const lines = ['{ printf 1 >&3; } 2>/dev/null'];
  // The in-sandbox end of the proxy bridge starts in the background just before the command: a
  // client that connects at once can find nothing listening yet. Wait for it (bash, which runs
  // this when hosts are allowed; at most about a second) without starting a program: the probe is
  // a redirection of a builtin (`true`: a failed one never ends the shell, unlike `:`), the pause
  // a read on the start descriptor, which atlas never writes to (`sleep` if that read cannot wait).
  if (policy.allowed_domains.length > 0 && process.platform === 'linux') {
    lines.push(
      'if [ -n "$BASH_VERSION" ]; then i=0; while [ $i -lt 100 ] && ! { true </dev/tcp/127.0.0.1/3128; } 2>/dev/null; do read -t 0.01 -u 3 _ 2>/dev/null || [ $? -gt 128 ] || sleep 0.01; i=$((i+1)); done; fi',
    );
  }
  lines.push('exec 3>&-', 'unset ATLAS_SANDBOX_COMMAND', `export TMPDIR=${tmp} TMP=${tmp} TEMP=${tmp}`);
  // Inside the sandbox loopback is the sandbox's own: an allowed loopback host (a local model API,
  // a test server) is this machine's, reachable only through the proxy.
  if (policy.allowed_domains.some((d) => LOOPBACK.test(d)))
    lines.push(`export NO_PROXY=${NO_PROXY_WITHOUT_LOOPBACK} no_proxy=${NO_PROXY_WITHOUT_LOOPBACK}`);
  lines.push(spec.shell ? `exec /bin/sh -c ${shellQuote(spec.command)}` : `exec ${[spec.command, ...spec.args].map(shellQuote).join(' ')}`);
  return lines.join('\n');
}

const WRITE_DENIED = /Read-only file system|Operation not permitted|EROFS|EPERM/;
const NETWORK_DENIED =
  /blocked-by-sandbox-runtime|not allowed by ruleset|Could not resolve host|name resolution|EAI_AGAIN|ENOTFOUND|403 Forbidden|Connection refused|ECONNREFUSED|Couldn't connect to server/;

/** A failure's stderr read against the policy: which rule refused it, and where to change it. */
export function explainDenial(stderr: string, policy: SandboxPolicy): string | undefined {
  const notes: string[] = [];
  const readPath = policy.deny_read.find((p) => stderr.includes(p));
  if (readPath) notes.push(`${readPath} is unreadable in the sandbox (execution.sandbox.deny_read and atlas's built-in list)`);
  if (WRITE_DENIED.test(stderr)) {
    notes.push(`writes are allowed only in ${policy.allow_write.join(', ')} (add a path with execution.sandbox.allow_write)`);
  }
  if (NETWORK_DENIED.test(stderr)) {
    const allowed = policy.allowed_domains.length ? policy.allowed_domains.join(', ') : 'no host';
    notes.push(`network access is limited to ${allowed} (execution.sandbox.allowed_domains)`);
  }
  if (notes.length === 0) return undefined;
  return `sandbox policy: ${notes.join('; ')}; see \`atlas doctor\` and docs/execution-modes.md`;
}

/**
 * How long one wrap is reused. Wrapping scans the worktree (ripgrep) for files the sandbox must
 * protect and costs more than running the command, so a run's commands share one wrapped runner
 * that takes the command from the environment; it is redone when the worktree's protected paths
 * change (one appeared or went) and at least this often, so later files are protected too.
 */
export const REWRAP_MS = 30_000;

/** What every command of the wrap runs: it takes the command line from this variable. */
const RUNNER_COMMAND = 'eval "$ATLAS_SANDBOX_COMMAND"';

interface Wrap {
  /** The program and its arguments (runner-argv.ts). */
  runner: string[];
  /** Protected paths absent at wrap time: bubblewrap creates a stub at each while a command runs. */
  stubs: string[];
  key: string;
  at: number;
}

export function createSandboxExecutor(policy: SandboxPolicy, taskDir: string): ProcessExecutor {
  let counter = 0;
  let running = 0;
  // Loose refs older than this executor are the user's, not a step's.
  const createdAt = Date.now() - 1000;
  // The branch refs when the sandbox started: any other ref a command writes is the step's.
  const refsBefore = looseBranchRefs(policy.worktree);
  let wrap: Wrap | undefined;

  let scanned: { stubs: string[]; at: number } | undefined;

  /**
   * The protected paths absent from the worktree, scanned once per step (a ripgrep walk of the
   * tree: 10-30 ms, as much as a short command). Between two commands of a step only its own
   * sandboxed commands ran: an absent protected path is a read-only mount point while they run,
   * and a `.claude` folder one of them makes below the top holds only what the step could have
   * written there in its first command anyway. A new step, or REWRAP_MS, scans again.
   */
  async function absentStubs(): Promise<string[]> {
    if (scanned && Date.now() - scanned.at < REWRAP_MS) return scanned.stubs;
    scanned = { stubs: await absentStubPaths(policy.worktree), at: Date.now() };
    return scanned.stubs;
  }

  async function currentWrap(): Promise<Wrap> {
    // While a command runs its stubs exist: the absent set is only known between commands.
    if (wrap && running > 0) return wrap;
    const stubs = await absentStubs();
    const key = stubs.join('\0');
    if (wrap && wrap.key === key && Date.now() - wrap.at < REWRAP_MS) return wrap;
    if (wrap) commandFinished();
    const tempBefore = new Set(emptyMountDirs());
    const wrapped = await wrapCommand(policy, RUNNER_COMMAND, `atlas-${process.pid}-${++counter}`);
    const runner = runnerArgv(wrapped, RUNNER_COMMAND, policy.allowed_domains.length === 0, bridgeSockets());
    // Recorded before any command starts: a SIGKILL from here on leaves only what this names.
    recordLitter(taskDir, {
      worktree: policy.worktree,
      stubs,
      sockets: bridgeSockets(),
      temp_dirs: emptyMountDirs().filter((d) => !tempBefore.has(d)),
    });
    wrap = { runner, stubs, key, at: Date.now() };
    return wrap;
  }

  return {
    mode: 'sandbox',
    async prepare(spec: LaunchSpec): Promise<Launch> {
      mkdirSync(policy.tmpdir, { recursive: true, mode: 0o700 });
      const current = await currentWrap();
      running++;
      let done = false;
      return {
        command: current.runner[0]!,
        args: current.runner.slice(1),
        shell: false,
        env: {
          ...sandboxEnvironment(spec.env, policy.env),
          ...(policy.home ? { HOME: policy.home } : {}),
          ...policy.git_env,
          ATLAS_SANDBOX_COMMAND: innerCommand(spec, policy),
        },
        finished: () => {
          if (done) return;
          done = true;
          running--;
          // Removing a stub while another sandbox still uses it would lift its mount there.
          if (running === 0) removeStubs(current.stubs);
        },
        explain: (stderr) => explainDenial(stderr, policy),
        verify: () => checkLayoutAfterCommand(policy.worktree, taskDir, policy.deny_write, createdAt, refsBefore),
        signalsStart: true,
      };
    },
    beginStep(): void {
      scanned = undefined;
    },
    async close(): Promise<void> {
      if (wrap) commandFinished();
      wrap = undefined;
    },
  };
}
