// atlas usage [--task ID] [--since DATE] [--by task|step|template|day|model] [--json]
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { UsageGroup } from '../../usage/collect.js';
import { collectUsage, parseSince, USAGE_GROUPS } from '../../usage/collect.js';
import { formatUsageTable, usageJson } from '../../usage/format.js';
import type { CliContext } from '../context.js';

export default async function usage(ctx: CliContext, opts: { task?: string; since?: string; by?: string }): Promise<number> {
  const by = (opts.by ?? 'task') as UsageGroup;
  if (!(USAGE_GROUPS as readonly string[]).includes(by)) {
    throw new AtlasError(`--by expects one of ${USAGE_GROUPS.join(', ')}, got "${opts.by}"`, { exitCode: EXIT.input });
  }
  const report = collectUsage({
    home: ctx.home,
    by,
    taskId: opts.task,
    sinceMs: opts.since !== undefined ? parseSince(opts.since) : undefined,
    warn: (text) => ctx.out.warn(text),
  });
  ctx.out.result(usageJson(report), () => formatUsageTable(report));
  return EXIT.ok;
}
