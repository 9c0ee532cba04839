// atlas config list: every key with its effective value and where that value came from.
import { formatSetting } from '../../config/format.js';
import { loadConfig } from '../../config/load.js';
import { LEAVES } from '../../config/schema.js';
import { EXIT } from '../../domain/errors.js';
import { redactUrl } from '../../domain/redact-url.js';
import { locateWorktree } from '../../git/locate.js';
import type { CliContext } from '../context.js';

export default async function configList(ctx: CliContext): Promise<number> {
  const repoRoot = locateWorktree(ctx.cwd)?.root;
  const { config, sources, warnings } = await loadConfig({ home: ctx.home, ...(repoRoot ? { repoRoot } : {}), overrides: ctx.overrides() });
  for (const w of warnings) ctx.out.warn(w);
  const rows = LEAVES.map((leaf) => {
    const found = leaf.key.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], config);
    // A URL with a password (server.database) is shown without it.
    const value = typeof found === 'string' ? redactUrl(found) : found;
    return {
      key: leaf.key,
      value: formatSetting(leaf, value),
      raw: value,
      source: sources[leaf.key] ?? 'default',
      env: leaf.env,
      doc: leaf.doc,
    };
  });
  ctx.out.result({ settings: rows.map(({ key, raw, source, env, doc }) => ({ key, value: raw, source, env, doc })) }, () => {
    const kw = Math.max(...rows.map((r) => r.key.length));
    const vw = Math.min(40, Math.max(...rows.map((r) => r.value.length)));
    return rows.map((r) => `${r.key.padEnd(kw)}  ${r.value.padEnd(vw)}  ${r.source}`).join('\n');
  });
  return EXIT.ok;
}
