// What `atlas serve` checks before it listens: is the address loopback, can this machine run the
// sandbox, and do the sandbox's network proxies start.
import { existsSync } from 'node:fs';
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { BridgeSweep } from '../exec/sandbox/socat.js';
import { sandboxBridgesDir } from '../store/paths.js';

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Fails fast (seed 002 F6): without --local, conversation turns run in the OS sandbox, so the
 * sandbox must work on this machine before the server listens.
 */
export async function sandboxReadiness(
  local: boolean,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ ready: boolean; mode: 'local' | 'sandbox'; detail: string; hint?: string }> {
  if (local) return { ready: true, mode: 'local', detail: 'steps run UNSANDBOXED on this machine (--local)' };
  const { checkReadiness, installHint } = await import('../exec/readiness.js');
  const r = await checkReadiness(env);
  if (r.ready) return { ready: true, mode: 'sandbox', detail: 'conversation turns run in the OS sandbox' };
  const missing = r.tools.filter((t) => !t.path);
  const what = [...missing.map((t) => `${t.name} (${t.apt}) is not installed`), ...r.problems];
  return {
    ready: false,
    mode: 'sandbox',
    detail: `this machine cannot run the sandbox: ${what.join('; ')}`,
    ...(missing.length > 0 ? { hint: installHint(missing) } : {}),
  };
}

export async function holdSandboxOrFail(config: Config, home: string): Promise<() => Promise<void>> {
  try {
    return await (await import('./conversations/turn-executor.js')).holdSandbox(config, home);
  } catch (error) {
    throw new AtlasError(
      `atlas serve runs steps sandboxed, and the sandbox's network proxies could not start: ${(error as Error).message}; nothing was started`,
      {
        exitCode: EXIT.failure,
        hint: 'check with `atlas doctor`, or pass --local to run agents and commands unsandboxed on this machine (only for trusted users)',
      },
    );
  }
}

/**
 * Stops the network bridges that killed sandboxed servers of this home left, whichever mode this
 * server runs in (the module loads only when a server recorded any).
 */
export async function stopDeadServersBridges(home: string, note: (stopped: BridgeSweep) => void): Promise<void> {
  const dir = sandboxBridgesDir(home);
  if (!existsSync(dir)) return;
  const swept = (await import('../exec/sandbox/bridge-record.js')).sweepDeadBridges(dir);
  if (swept.processes.length + swept.sockets.length > 0) note(swept);
}
