// atlas claude uninstall [--scope project|local|user]
import { EXIT } from '../../domain/errors.js';
import type { InstallScope } from '../../integrations/claude/install.js';
import { uninstallClaudeHooks } from '../../integrations/claude/install.js';
import type { CliContext } from '../context.js';

const WORDS = {
  removed: "atlas's hooks removed; everything else is as it was",
  deleted: 'deleted (atlas had created it and nothing else was in it)',
  'not-installed': "atlas's hooks are not there; nothing changed",
} as const;

export default async function claudeUninstall(ctx: CliContext, opts: { scope: InstallScope }): Promise<number> {
  const report = await uninstallClaudeHooks({ scope: opts.scope, cwd: ctx.cwd, env: process.env, home: ctx.home });
  ctx.out.result(report, () => `${report.path}: ${WORDS[report.action as keyof typeof WORDS]}`);
  return EXIT.ok;
}
