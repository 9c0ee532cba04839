// atlas serve [--host H] [--port P] [--local] [--recover]: runs until SIGTERM or Ctrl+C, then stops
// gracefully (docs/server.md).
import { AtlasError, EXIT } from '../../domain/errors.js';
import { initializeHome } from '../../engine/init-home.js';
import { startServer } from '../../server/server.js';
import type { CliContext } from '../context.js';

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
  await initializeHome(ctx.home);
  const config = await ctx.config();
  const server = await startServer({
    home: ctx.home,
    config,
    host: opts.host,
    port: Number(opts.port),
    local: Boolean(opts.local),
    recover: Boolean(opts.recover),
    version: typeof ATLAS_VERSION === 'string' ? ATLAS_VERSION : '0.0.0-dev',
    atlasCommand: { command: process.execPath, args: [process.argv[1]!] },
  });
  await new Promise<void>((resolve) => {
    // The handlers stay while the server stops: without one, a library's exit hook (signal-exit,
    // under the lock library) re-raises the signal and kills the stop half-way. A second Ctrl+C
    // ends at once (the next server stops what this one left running); a repeated SIGTERM waits.
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        if (signal === 'SIGINT') process.exit(130);
        return;
      }
      stopping = true;
      void server.stop(signal).then(resolve);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  return EXIT.ok;
}
