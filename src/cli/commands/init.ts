// atlas init: set up ATLAS_HOME (folders and a commented config.yaml). Safe to run again.
import { EXIT } from '../../domain/errors.js';
import { initializeHome } from '../../engine/init-home.js';
import type { CliContext } from '../context.js';

export default async function init(ctx: CliContext): Promise<number> {
  const result = await initializeHome(ctx.home);
  ctx.out.result({ home: result.home, created: result.created }, () =>
    result.created.length === 0
      ? `atlas is already set up in ${result.home}; nothing to do`
      : [`set up atlas in ${result.home}:`, ...result.created.map((p) => `  created ${p}`), '', `settings: ${result.home}/config.yaml (every key listed, commented out)`].join('\n'),
  );
  return EXIT.ok;
}
