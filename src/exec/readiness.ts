// Can this machine run steps in the sandbox? On Linux it needs bubblewrap, socat and ripgrep; on
// macOS ripgrep (Seatbelt is built in). Sandbox mode checks this before anything runs and stops
// with what is missing and how to install it; `atlas doctor` also runs a trial `true`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findExecutable } from '../agent/find-executable.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import { ProcessGroups } from './process-groups.js';
import { runProcess } from './run-process.js';

export interface ToolCheck {
  name: string;
  /** The Debian package (apt-get) and Homebrew formula that provide it. */
  apt: string;
  brew: string;
  path?: string;
}

export interface Readiness {
  platform: NodeJS.Platform;
  ready: boolean;
  tools: ToolCheck[];
  /** What the sandbox library reports missing or unusable (e.g. root without CAP_SETFCAP). */
  problems: string[];
  warnings: string[];
}

function toolsFor(platform: NodeJS.Platform): Omit<ToolCheck, 'path'>[] {
  if (platform === 'linux') {
    return [
      { name: 'bwrap', apt: 'bubblewrap', brew: 'bubblewrap' },
      { name: 'socat', apt: 'socat', brew: 'socat' },
      { name: 'rg', apt: 'ripgrep', brew: 'ripgrep' },
    ];
  }
  if (platform === 'darwin') return [{ name: 'rg', apt: 'ripgrep', brew: 'ripgrep' }];
  return [];
}

export function installHint(missing: readonly ToolCheck[], platform: NodeJS.Platform = process.platform): string {
  if (platform === 'darwin') return `install it: brew install ${missing.map((t) => t.brew).join(' ')}`;
  return `install ${missing.length === 1 ? 'it' : 'them'}: sudo apt-get install ${missing.map((t) => t.apt).join(' ')} (Debian/Ubuntu), or sudo dnf install ${missing.map((t) => t.apt).join(' ')} (Fedora)`;
}

/**
 * A machine found ready stays ready for this process: a run asks more than once (the start, the
 * task's executor) and each library check spawns `which` three times.
 */
const found = new Map<string, Readiness>();

export async function checkReadiness(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): Promise<Readiness> {
  const key = `${platform}\0${env['PATH'] ?? ''}`;
  const known = found.get(key);
  if (known) return known;
  const result = await freshReadiness(env, platform);
  if (result.ready) found.set(key, result);
  return result;
}

async function freshReadiness(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): Promise<Readiness> {
  const tools: ToolCheck[] = toolsFor(platform).map((t) => {
    const path = findExecutable(t.name, env);
    return path ? { ...t, path } : { ...t };
  });
  const problems: string[] = [];
  const warnings: string[] = [];
  if (platform !== 'linux' && platform !== 'darwin') problems.push(`atlas has no sandbox for ${platform} (Linux and macOS only)`);
  else if (tools.every((t) => t.path)) {
    const { sandboxDependencyErrors } = await import('./sandbox/runtime.js');
    const check = await sandboxDependencyErrors();
    problems.push(...check.errors);
    warnings.push(...check.warnings);
  }
  return { platform, ready: problems.length === 0 && tools.every((t) => t.path), tools, problems, warnings };
}

/** Stops a sandbox-mode run before anything starts when the sandbox cannot work here. */
export async function assertSandboxReady(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): Promise<void> {
  const r = await checkReadiness(env, platform);
  if (r.ready) return;
  const missing = r.tools.filter((t) => !t.path);
  const what = [...missing.map((t) => `${t.name} (${t.apt}) is not installed`), ...r.problems];
  throw new AtlasError(`execution.mode is sandbox, but this machine cannot run the sandbox: ${what.join('; ')}; nothing was run`, {
    exitCode: EXIT.input,
    hint: `${missing.length > 0 ? `${installHint(missing, platform)}; ` : ''}check with \`atlas doctor\`, or run on this machine without a sandbox with --local (execution.mode: local)`,
  });
}

export interface Trial {
  ok: boolean;
  /** Wall time of the trial, sandbox start-up included. */
  ms: number;
  error?: string;
}

/** Runs `true` in a sandbox around a throwaway folder: proof that the sandbox really starts here. */
export async function trialRun(): Promise<Trial> {
  const dir = mkdtempSync(join(tmpdir(), 'atlas-doctor-'));
  const started = Date.now();
  const { acquireSandbox, releaseSandbox } = await import('./sandbox/runtime.js');
  let acquired = false;
  try {
    await acquireSandbox([]);
    acquired = true;
    const { createSandboxExecutor } = await import('./sandbox/executor.js');
    const executor = createSandboxExecutor(
      { worktree: dir, tmpdir: join(dir, 'tmp'), allow_write: [dir], deny_write: [], deny_read: [], allowed_domains: [] },
      dir,
    );
    const result = await runProcess({ command: 'true', cwd: dir, groups: new ProcessGroups(), executor, timeoutMs: 30_000, capture: true });
    await executor.close?.();
    const ms = Date.now() - started;
    if (result.exitCode === 0) return { ok: true, ms };
    const stderr = result.stderr.toString('utf8').trim().split('\n').slice(-3).join(' ');
    return { ok: false, ms, error: `exit ${result.exitCode}${stderr ? `: ${stderr}` : ''}` };
  } catch (error) {
    return { ok: false, ms: Date.now() - started, error: error instanceof Error ? error.message : String(error) };
  } finally {
    if (acquired) await releaseSandbox();
    rmSync(dir, { recursive: true, force: true });
  }
}
