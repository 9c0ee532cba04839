// atlas ui [--port P] [--open]: the web board for this machine's tasks on 127.0.0.1, signed in
// through a one-time link (docs/ui.md). Runs until Ctrl+C.
import { spawn } from 'node:child_process';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { initializeHome } from '../../engine/init-home.js';
import { startLocalBoard } from '../../server/local-board.js';
import type { CliContext } from '../context.js';
import { runUntilStopped } from '../until-stopped.js';

declare const ATLAS_VERSION: string;

export interface UiFlags {
  port: string;
  open?: boolean;
}

function openBrowser(link: string): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  const child = spawn(command, [link], { stdio: 'ignore', detached: true });
  child.on('error', () => process.stderr.write(`atlas: could not start ${command}: open the link yourself\n`));
  child.unref();
}

export default async function ui(ctx: CliContext, opts: UiFlags): Promise<number> {
  if (!/^\d{1,5}$/.test(opts.port) || Number(opts.port) > 65535) {
    throw new AtlasError(`--port expects 0..65535, got "${opts.port}"`, { exitCode: EXIT.input });
  }
  await runUntilStopped(
    async () => {
      await initializeHome(ctx.home);
      return startLocalBoard({
        home: ctx.home,
        config: await ctx.config(),
        port: Number(opts.port),
        version: typeof ATLAS_VERSION === 'string' ? ATLAS_VERSION : '0.0.0-dev',
        atlasCommand: { command: process.execPath, args: [process.argv[1]!] },
      });
    },
    (board) => board.server,
    (board) => {
      process.stdout.write(
        `atlas board for ${ctx.home} (${board.adopted} task(s) newly listed)\nopen (this link works once): ${board.link}\n`,
      );
      if (opts.open) openBrowser(board.link);
    },
  );
  return EXIT.ok;
}
