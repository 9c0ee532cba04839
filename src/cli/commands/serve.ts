// atlas serve [--host H] [--port P] [--local] [--recover]: runs until SIGTERM or Ctrl+C, then stops
// gracefully (docs/server.md).
import { AtlasError, EXIT } from '../../domain/errors.js';
import { initializeHome } from '../../engine/init-home.js';
import { startServer } from '../../server/server.js';
import type { CliContext } from '../context.js';
import { runUntilStopped } from '../until-stopped.js';

declare const ATLAS_VERSION: string;

export interface ServeFlags {
  host: string;
  port: string;
  local?: boolean;
  recover?: boolean;
}

export default async function serve(ctx: CliContext, opts: ServeFlags): Promise<number> {
  if (!/^\d{1,5}$/.test(opts.port) || Number(opts.port) > 65535) {
    throw new AtlasError(`--port expects 0..65535, got "${opts.port}"`, { exitCode: EXIT.input });
  }
  await runUntilStopped(
    async () => {
      await initializeHome(ctx.home);
      return startServer({
        home: ctx.home,
        config: await ctx.config(),
        host: opts.host,
        port: Number(opts.port),
        local: Boolean(opts.local),
        recover: Boolean(opts.recover),
        version: typeof ATLAS_VERSION === 'string' ? ATLAS_VERSION : '0.0.0-dev',
        atlasCommand: { command: process.execPath, args: [process.argv[1]!] },
      });
    },
    (server) => server,
  );
  return EXIT.ok;
}
