// atlas claude install [--scope project|local|user]
import { EXIT } from '../../domain/errors.js';
import type { InstallScope } from '../../integrations/claude/install.js';
import { installClaudeHooks } from '../../integrations/claude/install.js';
import type { CliContext } from '../context.js';

const WORDS = {
  created: "created with atlas's hooks",
  installed: "atlas's hooks added",
  unchanged: "atlas's hooks already there; nothing changed",
} as const;

export default async function claudeInstall(ctx: CliContext, opts: { scope: InstallScope }): Promise<number> {
  const report = await installClaudeHooks({ scope: opts.scope, cwd: ctx.cwd, env: process.env, home: ctx.home });
  ctx.out.result(report, () =>
    [
      `${report.path}: ${WORDS[report.action as keyof typeof WORDS]}`,
      `Claude Code sessions now run \`${report.command}\` on every hook event: requests are recorded, tasks learn from the session, and the guard keeps the agent away from atlas's keys and hook files.`,
      `Undo with \`atlas claude uninstall${opts.scope === 'project' ? '' : ` --scope ${opts.scope}`}\` (see docs/claude-code.md).`,
    ].join('\n'),
  );
  return EXIT.ok;
}
