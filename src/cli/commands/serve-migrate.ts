// atlas serve migrate: imports this ATLAS_HOME's file-based server state (tokens, conversations
// with their messages and event logs, the task index) into the server state: server.database or
// ATLAS_DATABASE_URL (PostgreSQL), else $ATLAS_HOME/server/state.db. Safe to run again.
import { AtlasError, EXIT } from '../../domain/errors.js';
import { redactUrl } from '../../domain/redact-url.js';
import { importFileState } from '../../server/state-import.js';
import { databaseUrl, isPostgresUrl, openState } from '../../server/state/open.js';
import type { CliContext } from '../context.js';

export default async function serveMigrate(ctx: CliContext): Promise<number> {
  const config = await ctx.config();
  const url = databaseUrl(config.server.database);
  if (url !== '' && !isPostgresUrl(url)) {
    throw new AtlasError(`server.database must be a postgres:// URL, got "${redactUrl(url)}"`, {
      exitCode: EXIT.input,
      hint: 'for example postgres://atlas:PASSWORD@db.example.com:5432/atlas; leave it empty for the embedded SQLite file',
    });
  }
  let state;
  try {
    state = await openState({ home: ctx.home, url, poolSize: 2 });
  } catch (error) {
    throw new AtlasError((error as Error).message, { exitCode: EXIT.failure, hint: 'check that the database is running and the URL (server.database or ATLAS_DATABASE_URL) is right' });
  }
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
