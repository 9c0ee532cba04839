// atlas hook uninstall [--repo DIR]
import { EXIT } from '../../domain/errors.js';
import type { UninstallAction } from '../../githooks/install.js';
import { uninstallGitHooks } from '../../githooks/install.js';
import type { CliContext } from '../context.js';

const WORDS: Record<UninstallAction, string> = {
  removed: 'removed',
  restored: 'removed; your previous hook is back in place',
  not_installed: 'not installed',
};

export default async function hookUninstall(ctx: CliContext, opts: { repo?: string }): Promise<number> {
  const report = await uninstallGitHooks({ repo: opts.repo ?? ctx.cwd });
  for (const warning of report.warnings) ctx.out.warn(warning);
  ctx.out.result(report, () => {
    const lines = [`atlas git hooks in ${report.hooks_dir}:`];
    for (const h of report.hooks) lines.push(`  ${h.name.padEnd(12)} ${WORDS[h.action]}${h.note ? ` (${h.note})` : ''}`);
    return lines.join('\n');
  });
  return EXIT.ok;
}
