// atlas serve token create --account NAME [--expires-in DURATION] [--read-only]

import { parseDuration } from '../../domain/duration.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { createToken } from '../../server/accounts/tokens.js';
import type { CliContext } from '../context.js';

export default async function serveTokenCreate(
  ctx: CliContext,
  opts: { account: string; expiresIn?: string; readOnly?: boolean },
): Promise<number> {
  let expiresInMs: number | undefined;
  if (opts.expiresIn !== undefined) {
    // Days too: token lifetimes are counted in them.
    const days = /^(\d{1,4})d$/.exec(opts.expiresIn.trim());
    expiresInMs = days ? Number(days[1]) * 86_400_000 : parseDuration(opts.expiresIn);
    if (expiresInMs === undefined || expiresInMs <= 0) {
      throw new AtlasError(
        `--expires-in expects a duration above zero such as 90m, 12h or 30d (days up to 9999d), got "${opts.expiresIn}"`,
        { exitCode: EXIT.input },
      );
    }
  }
  const { token, record } = await createToken(ctx.home, opts.account, new Date(), {
    expiresInMs,
    readOnly: opts.readOnly,
    database: (await ctx.config()).server.database,
  });
  const limits = [record.read_only ? 'read-only' : '', record.expires_at ? `expires ${record.expires_at}` : ''].filter(Boolean).join(', ');
  ctx.out.result(
    {
      id: record.id,
      account: record.account,
      created_at: record.created_at,
      expires_at: record.expires_at ?? null,
      read_only: record.read_only === true,
      token,
    },
    () =>
      [
        `token ${record.id} for account ${record.account}${limits ? ` (${limits})` : ''} (shown once: only its hash is kept):`,
        '',
        `  ${token}`,
        '',
        'send it as: Authorization: Bearer <token>',
      ].join('\n'),
  );
  return 0;
}
