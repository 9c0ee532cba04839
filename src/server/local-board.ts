// `atlas ui` (docs/ui.md): the board for this machine's ATLAS_HOME, on 127.0.0.1 only. The server
// of `atlas serve`, with one account, `local`, that owns the machine's tasks (each task gets the
// server's record of its owner, as a task started over HTTP has), and a one-time code in the
// printed link that the browser exchanges for the session cookie, as Jupyter does.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import { listTaskRefs } from '../store/task-store.js';
import { serverDir } from './accounts/tokens.js';
import { adoptTask } from './board/local-watch.js';
import type { RunningServer } from './server.js';
import { startServer } from './server.js';

export const LOCAL_ACCOUNT = 'local';

/** Gives the `local` account every task of this home that no account owns yet; returns how many. */
export function adoptLocalTasks(home: string): number {
  const dir = join(serverDir(home), 'tasks');
  let adopted = 0;
  for (const ref of listTaskRefs(home)) {
    if (existsSync(join(dir, `${ref.id}.json`))) continue;
    if (adoptTask(home, ref, LOCAL_ACCOUNT)) adopted++;
  }
  return adopted;
}

export interface LocalBoard {
  server: RunningServer;
  /** The link to open: it signs the browser in once. */
  link: string;
  adopted: number;
}

export async function startLocalBoard(options: {
  home: string;
  config: Config;
  port: number;
  version: string;
  atlasCommand: { command: string; args: string[] };
  uiDir?: string;
  write?: (line: string) => void;
  warn?: (text: string) => void;
}): Promise<LocalBoard> {
  const adopted = adoptLocalTasks(options.home);
  const code = randomBytes(24).toString('base64url');
  // Actions run `atlas` on this machine as the terminal would (execution.mode applies as on the
  // CLI), so the server's --local notice, meant for serving others, is not repeated here.
  const warn = options.warn ?? ((text: string) => process.stderr.write(`atlas: warning: ${text}\n`));
  const server = await startServer({
    home: options.home,
    config: options.config,
    host: '127.0.0.1',
    port: options.port,
    local: true,
    recover: false,
    version: options.version,
    atlasCommand: options.atlasCommand,
    write: options.write ?? (() => undefined),
    // Crashed tasks are on the board with their recovery: the server's hint for its operator is not for here.
    warn: (text) => (/^--local:|no API tokens yet|cut off by a stopped server/.test(text) ? undefined : warn(text)),
    uiDir: options.uiDir,
    localLogin: { account: LOCAL_ACCOUNT, code },
    // Tasks a terminal starts or runs while the board is open: on the board live (local-watch.ts).
    localTasks: LOCAL_ACCOUNT,
  });
  return { server, link: `${server.url}/ui/login?code=${code}`, adopted };
}
