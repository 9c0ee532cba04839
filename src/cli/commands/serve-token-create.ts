// atlas serve token create --account NAME
import { createToken } from '../../server/tokens.js';
import type { CliContext } from '../context.js';

export default async function serveTokenCreate(ctx: CliContext, opts: { account: string }): Promise<number> {
  const { token, record } = await createToken(ctx.home, opts.account);
  ctx.out.result({ id: record.id, account: record.account, created_at: record.created_at, token }, () =>
    [
      `token ${record.id} for account ${record.account} (shown once: only its hash is kept):`,
      '',
      `  ${token}`,
      '',
      'send it as: Authorization: Bearer <token>',
    ].join('\n'),
  );
  return 0;
}
