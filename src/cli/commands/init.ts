// atlas init: set up ATLAS_HOME (folders, a commented config.yaml, the signing key, the sandbox as
// default execution mode where it can run) and, inside a git repository, offer the git hooks that
// record checkpoints. Safe to run again.
import { join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { initializeHome } from '../../engine/init-home.js';
import { tightenHome } from '../../engine/private-home.js';
import { locateWorktree } from '../../git/locate.js';
import type { CliContext } from '../context.js';
import { canPrompt } from '../interactive.js';

type GitHooksStatus = import('../../githooks/install.js').GitHooksStatus;

/** What `init` says about hooks it did not install this run: their real state in the repository. */
function hooksStateLine(status: GitHooksStatus | undefined, error: string | undefined): string {
  const add = '`atlas hook install` adds automatic checkpoints on commit and push';
  if (!status) return `git hooks: cannot tell whether they are installed (${error ?? 'unknown error'}); ${add}`;
  const missing = status.hooks.filter((h) => !h.installed).map((h) => h.name);
  if (missing.length === status.hooks.length) return `git hooks not installed; ${add}`;
  if (missing.length > 0) return `git hooks partly installed in ${status.hooks_dir} (missing: ${missing.join(', ')}); ${add}`;
  const names = status.hooks.map((h) => h.name).join(', ');
  if (status.hooks.some((h) => !h.current)) {
    return `git hooks installed in ${status.hooks_dir} (${names}), but not by this atlas or by an older one; \`atlas hook install\` updates them`;
  }
  return `git hooks installed in ${status.hooks_dir} (${names}): commits and pushes record checkpoints`;
}

export interface InitOptions {
  /** true: install the git hooks; false: don't ask; undefined: ask on a terminal. */
  hooks?: boolean;
  interactive?: boolean;
  /** --sandbox / --local: the default execution mode to write; undefined: ask on a terminal (sandbox otherwise). */
  sandbox?: boolean;
  local?: boolean;
}

/** The default execution mode init writes: sandbox where it can run, unless the person opts out. */
async function chooseMode(opts: InitOptions, configPath: string): Promise<string> {
  const { writeDefaultMode } = await import('../../engine/init-mode.js');
  if (opts.local) return describeMode(await writeDefaultMode(configPath, 'local'));
  const { checkReadiness } = await import('../../exec/readiness.js');
  const readiness = await checkReadiness();
  if (!readiness.ready) {
    const missing = [...readiness.tools.filter((t) => !t.path).map((t) => t.name), ...readiness.problems].join('; ');
    return `execution mode: local (this machine cannot run the sandbox: ${missing || 'unsupported platform'}; \`atlas doctor\` says how to set it up)`;
  }
  let mode: 'sandbox' | 'local' = 'sandbox';
  if (!opts.sandbox && canPrompt(opts.interactive)) {
    const { confirm } = await import('@inquirer/prompts');
    const yes = await confirm(
      {
        message: "Run task steps in the OS sandbox by default (writes only in the task's worktree, keys and other tasks unreadable)?",
        default: true,
      },
      { output: process.stderr },
    );
    mode = yes ? 'sandbox' : 'local';
  }
  return describeMode(await writeDefaultMode(configPath, mode));
}

function describeMode(choice: import('../../engine/init-mode.js').ModeChoice): string {
  switch (choice.action) {
    case 'set':
      return choice.mode === 'sandbox'
        ? 'execution mode: sandbox by default (docs/security.md); opt out with `atlas start --local`, or execution.mode: local in config.yaml'
        : 'execution mode: local (steps run unsandboxed); `atlas start --sandbox` or execution.mode: sandbox isolates them';
    case 'kept':
      return `execution mode: ${choice.mode} (already set in config.yaml)`;
    case 'unsupported':
    case 'manual':
      return `execution mode: not changed (${choice.reason}); set execution.mode: sandbox to isolate steps`;
  }
}

async function wantHooks(opts: InitOptions, repo: string): Promise<boolean> {
  if (opts.hooks !== undefined) return opts.hooks;
  if (!canPrompt(opts.interactive)) return false;
  const { confirm } = await import('@inquirer/prompts');
  return confirm(
    { message: `Install git hooks in ${repo} so commits and pushes record checkpoints automatically?`, default: true },
    { output: process.stderr },
  );
}

export default async function init(ctx: CliContext, opts: InitOptions): Promise<number> {
  const home = await initializeHome(ctx.home);
  // A home made by an older atlas or by hand may be readable by others: close it, and say so.
  const tightened = tightenHome(ctx.home);
  for (const f of tightened.failed) ctx.out.warn(`cannot make ${f.path} private (${f.error}): check its owner`);
  const repo = locateWorktree(ctx.cwd)?.root;
  const config = await ctx.config(repo);
  const keyLines: string[] = [];
  await ctx.ensureSigningKey(config, (line) => keyLines.push(line));
  const modeLine = await chooseMode(opts, join(home.home, 'config.yaml'));

  let hooks: Awaited<ReturnType<typeof import('../../githooks/install.js').installGitHooks>> | undefined;
  let status: GitHooksStatus | undefined;
  let statusError: string | undefined;
  if (repo) {
    const { gitHooksStatus, installGitHooks } = await import('../../githooks/install.js');
    if (await wantHooks(opts, repo)) {
      try {
        hooks = await installGitHooks({ repo });
      } catch (error) {
        // A shared (global) hooks folder is refused; the rest of init still counts.
        if (!(error instanceof AtlasError)) throw error;
        ctx.out.warn(`git hooks not installed: ${error.message}${error.hint ? ` (${error.hint})` : ''}`);
      }
    }
    try {
      status = await gitHooksStatus({ repo });
    } catch (error) {
      statusError = error instanceof Error ? error.message : String(error);
    }
  }

  const hooksState = status
    ? {
        hooks_dir: status.hooks_dir,
        hooks: status.hooks.map(({ name, installed, current, chained }) => ({ name, installed, current, chained })),
      }
    : null;
  ctx.out.result(
    {
      home: home.home,
      execution_mode: modeLine,
      created: home.created,
      made_private: tightened.changed,
      key: keyLines,
      git_hooks: hooks ?? null,
      git_hooks_status: hooksState,
    },
    () => {
      const lines =
        home.created.length === 0 && keyLines.length === 0
          ? [`atlas is already set up in ${home.home}`]
          : [`set up atlas in ${home.home}:`, ...home.created.map((p) => `  created ${p}`), ...keyLines.map((l) => `  ${l}`)];
      if (tightened.changed.length > 0) {
        const n = tightened.changed.length;
        lines.push(
          `made ${home.home} private: removed group and other access from ${n} path${n === 1 ? '' : 's'} (validation output and prompts can hold secrets)`,
        );
      }
      lines.push(`settings: ${home.home}/config.yaml (every key listed, commented out)`);
      lines.push(modeLine);
      if (hooks) {
        for (const h of hooks.hooks)
          lines.push(`git hook ${h.name}: ${h.action}${h.chained ? ' (your existing hook still runs first)' : ''} in ${hooks.hooks_dir}`);
        for (const w of hooks.warnings) lines.push(`warning: ${w}`);
      } else if (repo) {
        lines.push(hooksStateLine(status, statusError));
      }
      return lines.join('\n');
    },
  );
  return EXIT.ok;
}
