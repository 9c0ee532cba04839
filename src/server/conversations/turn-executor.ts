// The executor of one conversation turn: on this machine with `atlas serve --local`, otherwise the
// OS sandbox (src/exec/sandbox/) with the task policy applied to the conversation: writes only in
// its workspace and its tmp/ folder; $ATLAS_HOME/keys, the usual secrets, the server's folder (tokens,
// the account list, every other conversation), the store, other tasks' worktrees and workspaces unreadable.
import { mkdirSync } from 'node:fs';
import type { Config } from '../../config/schema.js';
import { localExecutor } from '../../exec/local.js';
import { diesWithParent, findSetpriv } from '../../exec/parent-death.js';
import type { SandboxPolicy } from '../../exec/sandbox/policy.js';
import type { Spawner } from '../../exec/spawner/client.js';
import { withSpawner } from '../../exec/spawner/client.js';
import { otherTaskWorktrees } from '../../exec/task-executor.js';
import type { ProcessExecutor } from '../../exec/types.js';
import { sandboxBridgesDir, taskFiles } from '../../store/paths.js';
import { conversationFiles } from './conversation-store.js';

export interface TurnExecution {
  executor: ProcessExecutor;
  /** The turn has ended: the sandbox's proxies stop when no other run uses them. */
  release(): Promise<void>;
}

/** The sandbox policy of one conversation's turn. */
export async function conversationPolicy(home: string, config: Config, account: string, id: string): Promise<SandboxPolicy> {
  const files = conversationFiles(home, account, id);
  const { buildPolicy } = await import('../../exec/sandbox/policy.js');
  // The conversation's workspace plays the task's worktree; an empty workspace id leaves every
  // task workspace under $ATLAS_HOME/workspaces unreadable. Its tmp/ is the conversation's.
  const policy = buildPolicy({
    task: { id: '', worktree: files.workspace, workspace_id: '' },
    taskDir: files.dir,
    home,
    config,
    otherWorktrees: otherTaskWorktrees(home, ''),
  });
  // The server's folder (tokens, every account and conversation) is hidden whole by the policy, with
  // this conversation's workspace and tmp/ bound back: a turn's start-up does not grow with the
  // number of conversations.
  return policy;
}

export async function createTurnExecutor(input: {
  home: string;
  config: Config;
  account: string;
  id: string;
  local: boolean;
  /** Who starts the agent (the server's spawner), if not the server itself. */
  spawner?: Spawner | undefined;
}): Promise<TurnExecution> {
  // Through the spawner, a --local agent needs no wrapper of its own: the spawner SIGKILLs every
  // group it started when the server dies (its parent-death signal, or its IPC channel's end).
  if (input.local)
    return { executor: withSpawner(localExecutor, input.spawner, groupDiesWithServer(localExecutor)), release: () => Promise.resolve() };
  const dir = conversationFiles(input.home, input.account, input.id).dir;
  const { finishLitter, sweepLitter } = await import('../../exec/sandbox/litter.js');
  await sweepLitter(dir);
  // Claude Code's hooks write into pipes made here (read-only inside: listed by the policy among
  // the conversation's own files, so it must exist first).
  mkdirSync(taskFiles(dir).channel, { recursive: true, mode: 0o700 });
  const policy = await conversationPolicy(input.home, input.config, input.account, input.id);
  const { createSandboxExecutor } = await import('../../exec/sandbox/executor.js');
  const { acquireSandbox, releaseSandbox } = await import('../../exec/sandbox/runtime.js');
  await acquireSandbox(policy.allowed_domains);
  // The sandbox dies with the process that started it, the server or its spawner, which dies with
  // the server (a SIGKILLed server leaves no agent running);
  // a local turn's leftovers are stopped by the next server's start-up sweep.
  const executor = withSpawner(diesWithParent(createSandboxExecutor(policy, dir)), input.spawner);
  return {
    executor,
    release: async () => {
      await executor.close?.();
      await releaseSandbox();
      finishLitter(dir);
    },
  };
}

/**
 * Runs a --local turn's agent under a small shell that the kernel sends SIGHUP when the server
 * dies (setpriv's parent-death signal), and that then SIGKILLs the turn's whole process group (the
 * agent and everything it started): a SIGKILLed replica's agent stops at once, instead of working
 * on beside the one another replica starts when it takes the turn over (issue 37). The agent's
 * stdin passes through (fd 9), and its exit status is the shell's. Without setpriv, the next
 * server's start-up sweep of recorded process groups is the only fence.
 */
export function groupDiesWithServer(executor: ProcessExecutor, setpriv = findSetpriv()): ProcessExecutor {
  if (!setpriv) return executor;
  const script = 'exec 9<&0; trap "kill -KILL 0" HUP; "$@" <&9 9<&- & wait $!';
  return {
    mode: executor.mode,
    prepare: async (spec) => {
      const launch = await executor.prepare(spec);
      const program = launch.shell ? ['/bin/sh', '-c', [launch.command, ...launch.args].join(' ')] : [launch.command, ...launch.args];
      return {
        ...launch,
        command: setpriv,
        args: ['--pdeathsig', 'HUP', '--', '/bin/sh', '-c', script, 'atlas-turn', ...program],
        shell: false,
      };
    },
  };
}

/**
 * Starts the sandbox's proxies for the server's life (its turns and tasks then share them, instead
 * of starting and stopping them around every turn), and records their bridges where the next
 * server finds them if this one is killed: returns what stops them.
 */
export async function holdSandbox(config: Config, home: string): Promise<() => Promise<void>> {
  const { allowedDomains } = await import('../../exec/sandbox/policy.js');
  const { acquireSandbox, bridgeSockets, releaseSandbox } = await import('../../exec/sandbox/runtime.js');
  const { recordBridges } = await import('../../exec/sandbox/bridge-record.js');
  await acquireSandbox(allowedDomains(config));
  const forget = recordBridges(sandboxBridgesDir(home), bridgeSockets());
  return async () => {
    await releaseSandbox();
    forget();
  };
}
