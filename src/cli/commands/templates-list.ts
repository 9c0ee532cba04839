// atlas templates list
import { EXIT } from '../../domain/errors.js';
import { locateWorktree } from '../../git/locate.js';
import { listTemplates } from '../../templates/search.js';
import type { CliContext } from '../context.js';

export default async function templatesList(ctx: CliContext): Promise<number> {
  const repoRoot = locateWorktree(ctx.cwd)?.root;
  const config = await ctx.config(repoRoot);
  const listings = await listTemplates({ repoRoot, home: ctx.home, dirs: config.templates.dirs, cwd: ctx.cwd });
  const data = listings.map((l) => ({
    name: l.name,
    origin: l.origin,
    file: l.file,
    shadowed: l.shadowed,
    description: l.template?.description ?? null,
    steps: l.template?.steps.map((s) => s.name) ?? null,
    error: l.error ?? null,
  }));
  ctx.out.result({ templates: data }, () => {
    if (listings.length === 0) return 'no templates found';
    const width = Math.max(...listings.map((l) => l.name.length));
    return listings
      .map((l) => {
        const head = `${l.name.padEnd(width)}  ${l.origin.padEnd(7)}`;
        if (l.error) return `${head}  ✗ ${l.error}`;
        const steps = l.template!.steps.map((s) => s.name).join(' → ');
        return `${head}  ${l.template!.description}${l.shadowed ? ' (hidden by an earlier one)' : ''}\n${' '.repeat(width + 11)}${steps}`;
      })
      .join('\n');
  });
  return listings.some((l) => l.error && !l.shadowed) ? EXIT.input : EXIT.ok;
}
