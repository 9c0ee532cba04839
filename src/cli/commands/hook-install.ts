// atlas hook install [--repo DIR] [--shared]
import { EXIT } from '../../domain/errors.js';
import type { InstallAction } from '../../githooks/install.js';
import { installGitHooks } from '../../githooks/install.js';
import type { CliContext } from '../context.js';

const WORDS: Record<InstallAction, string> = {
  installed: 'installed',
  updated: 'updated (it pointed to another atlas location)',
  unchanged: 'already installed',
};

export default async function hookInstall(ctx: CliContext, opts: { repo?: string; shared?: boolean }): Promise<number> {
  const report = await installGitHooks({ repo: opts.repo ?? ctx.cwd, shared: Boolean(opts.shared) });
  for (const warning of report.warnings) ctx.out.warn(warning);
  ctx.out.result(report, () => {
    const lines = [`atlas git hooks in ${report.hooks_dir}:`];
    for (const h of report.hooks) {
      const chain = h.chained ? `; your previous ${h.name} hook still runs first (kept as ${h.chained})` : '';
      lines.push(`  ${h.name.padEnd(12)} ${WORDS[h.action]}${chain}`);
    }
    lines.push(
      'Commits and pushes in this repository and its worktrees now record checkpoints for the atlas task that owns the working tree.',
      'Undo with `atlas hook uninstall` (see docs/automatic-checkpoints.md).',
    );
    return lines.join('\n');
  });
  return EXIT.ok;
}
