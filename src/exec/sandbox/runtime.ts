// The one @anthropic-ai/sandbox-runtime manager of this atlas process. Initialized on first use
// (it starts the network proxies and, on Linux, the socat bridges), then each command is wrapped
// with its task's filesystem policy. The library reads the current directory when it wraps (it
// protects the dotfiles and editor folders of the cwd, creating mount-point stubs for the absent
// ones), so every wrap runs with the process in the task's worktree, one wrap at a time.
import type { SandboxRuntimeConfig } from '@anthropic-ai/sandbox-runtime';
import type { SandboxPolicy } from './policy.js';

type Manager = typeof import('@anthropic-ai/sandbox-runtime')['SandboxManager'];

let manager: Manager | undefined;
let initialized: Promise<void> | undefined;
let domains: string | undefined;
let queue: Promise<unknown> = Promise.resolve();
/** Task runs using the sandbox: the last one to end stops the proxies (they keep the process alive). */
let users = 0;

async function load(): Promise<Manager> {
  manager ??= (await import('@anthropic-ai/sandbox-runtime')).SandboxManager;
  return manager;
}

function runtimeConfig(allowedDomains: readonly string[]): SandboxRuntimeConfig {
  return {
    network: { allowedDomains: [...allowedDomains], deniedDomains: [] },
    // Filesystem rules come with each wrap (the task's policy); these are the most restrictive.
    filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
  };
}

/**
 * Starts the manager (once per process). The proxy holds one allow list per process: a later task
 * with other domains replaces it (the CLI runs one task per process; a server running several
 * would pass their union).
 */
export async function initializeSandbox(allowedDomains: readonly string[]): Promise<Manager> {
  const m = await load();
  const key = JSON.stringify(allowedDomains);
  if (!initialized) {
    domains = key;
    initialized = m.initialize(runtimeConfig(allowedDomains)).catch((error: unknown) => {
      initialized = undefined;
      throw error;
    });
  } else if (domains !== key) {
    await initialized;
    domains = key;
    m.updateConfig(runtimeConfig(allowedDomains));
  }
  await initialized;
  return m;
}

/** Runs `fn` alone, with the process in `cwd` (the library reads process.cwd() while wrapping). */
function inDirectory<T>(cwd: string, fn: () => Promise<T>): Promise<T> {
  const run = queue.then(async () => {
    const before = process.cwd();
    process.chdir(cwd);
    try {
      return await fn();
    } finally {
      process.chdir(before);
    }
  });
  queue = run.catch(() => undefined);
  return run;
}

/** A task run starts using the sandbox; `releaseSandbox` when it ends. */
export async function acquireSandbox(allowedDomains: readonly string[]): Promise<void> {
  await initializeSandbox(allowedDomains);
  users++;
}

export async function releaseSandbox(): Promise<void> {
  users = Math.max(0, users - 1);
  if (users === 0) await resetSandbox();
}

/** The shell command line that runs `command` in the sandbox with the policy's filesystem rules. */
export async function wrapCommand(policy: SandboxPolicy, command: string, commandId: string): Promise<string> {
  const m = await initializeSandbox(policy.allowed_domains);
  return inDirectory(policy.worktree, () =>
    m.wrapWithSandbox(
      command,
      undefined,
      {
        filesystem: {
          denyRead: policy.deny_read,
          allowRead: policy.allow_read ?? [],
          allowWrite: policy.allow_write,
          denyWrite: policy.deny_write,
        },
        network: { allowedDomains: policy.allowed_domains, deniedDomains: [] },
      },
      undefined,
      { commandId },
    ),
  );
}

/** After a wrapped command ended: the library removes its mount-point stubs (when none runs). */
export function commandFinished(): void {
  manager?.cleanupAfterCommand();
}

/** The Unix sockets of the network bridges (Linux), for the crash-litter record. */
export function bridgeSockets(): string[] {
  if (!manager || !initialized) return [];
  // One socket for both when the library serves HTTP and SOCKS on one port.
  return [...new Set([manager.getLinuxHttpSocketPath(), manager.getLinuxSocksSocketPath()])].filter(
    (p): p is string => typeof p === 'string',
  );
}

/** Stops the proxies and bridges (tests and benchmarks; the library also does it on exit). */
export async function resetSandbox(): Promise<void> {
  if (!manager || !initialized) return;
  await initialized.catch(() => undefined);
  await manager.reset();
  initialized = undefined;
  domains = undefined;
}

/** What the library says this machine lacks (empty when it can sandbox). */
export async function sandboxDependencyErrors(): Promise<{ errors: string[]; warnings: string[]; supported: boolean }> {
  const m = await load();
  if (!m.isSupportedPlatform())
    return { errors: [`this platform (${process.platform}) has no sandbox support`], warnings: [], supported: false };
  const check = m.checkDependencies();
  return { errors: check.errors, warnings: check.warnings, supported: true };
}
