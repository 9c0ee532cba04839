// atlas serve migrate: imports this ATLAS_HOME's file-based server state (tokens, conversations
// with their messages and event logs, the task index) into the server state: server.database or
// ATLAS_DATABASE_URL (PostgreSQL), else $ATLAS_HOME/server/state.db. Safe to run again.
import { EXIT } from '../../domain/errors.js';
import { openConfiguredState } from '../../server/cluster/server-state.js';
import { importFileState } from '../../server/cluster/state-import.js';
import type { CliContext } from '../context.js';

export default async function serveMigrate(ctx: CliContext): Promise<number> {
  const config = await ctx.config();
  const state = await openConfiguredState(ctx.home, config.server.database, 2, config.server.messages);
  try {
    const report = await importFileState(ctx.home, state);
    ctx.out.result({ database: state.location, backend: state.backend, ...report }, () =>
      [
        `imported into ${state.location}:`,
        `  ${report.tokens} tokens, ${report.accounts} accounts, ${report.conversations} conversations, ${report.messages} messages, ${report.events} events, ${report.tasks} tasks`,
        `  ${report.unchanged} already there`,
        'the files under ATLAS_HOME/server are kept as they were',
      ].join('\n'),
    );
    return EXIT.ok;
  } finally {
    await state.close();
  }
}
