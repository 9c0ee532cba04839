// atlas templates show <name>
import { formatDuration } from '../../domain/duration.js';
import { EXIT } from '../../domain/errors.js';
import type { StepDefinition } from '../../domain/template.js';
import { isIdempotentStep } from '../../domain/template.js';
import { locateWorktree } from '../../git/locate.js';
import { loadTemplate } from '../../templates/search.js';
import type { CliContext } from '../context.js';

function indent(text: string, prefix: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => `${prefix}${l}`)
    .join('\n');
}

function stepText(step: StepDefinition, i: number): string {
  const flags = [
    `max_attempts ${step.max_attempts}`,
    `on_failure ${step.on_failure}`,
    ...(isIdempotentStep(step) ? ['idempotent'] : []),
    ...(step.timeout_ms !== undefined ? [`timeout ${formatDuration(step.timeout_ms)}`] : []),
  ];
  const lines = [`${i + 1}. ${step.name} (${step.type}) — ${flags.join(', ')}`];
  if (step.description) lines.push(`   ${step.description}`);
  switch (step.type) {
    case 'ai':
    case 'human':
      lines.push('   prompt:', indent(step.prompt, '     '));
      break;
    case 'command':
      for (const c of step.run) lines.push(`   $ ${c}`);
      break;
    case 'validation':
      if (step.commands.length === 0) lines.push('   commands: config validation.commands, else detected from the repository');
      for (const c of step.commands) lines.push(`   $ ${c}`);
      break;
    case 'git':
      lines.push(`   action: ${step.action}${step.message ? `, message: ${step.message}` : ''}`);
      break;
  }
  return lines.join('\n');
}

export default async function templatesShow(ctx: CliContext, name: string): Promise<number> {
  const repoRoot = locateWorktree(ctx.cwd)?.root;
  const config = await ctx.config(repoRoot);
  const { template, origin } = await loadTemplate(name, { repoRoot, home: ctx.home, dirs: config.templates.dirs, cwd: ctx.cwd });
  ctx.out.result({ ...template, origin }, () =>
    [
      `${template.name}: ${template.description}`,
      `  from ${template.source} (${origin})`,
      `  branch prefix ${template.branch_prefix}, ${template.worktree ? 'runs in a new git worktree' : 'runs in the current checkout'}`,
      '',
      ...template.steps.map(stepText),
    ].join('\n'),
  );
  return EXIT.ok;
}
