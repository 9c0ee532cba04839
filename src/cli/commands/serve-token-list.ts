// atlas serve token list
import { listTokens } from '../../server/accounts/tokens.js';
import type { CliContext } from '../context.js';

export default async function serveTokenList(ctx: CliContext): Promise<number> {
  const config = await ctx.config();
  const tokens = (await listTokens(ctx.home, config.server.database)).map(({ id, account, created_at, expires_at, read_only }) => ({
    id,
    account,
    created_at,
    expires_at: expires_at ?? null,
    read_only: read_only === true,
  }));
  ctx.out.result({ tokens }, () =>
    tokens.length === 0
      ? 'no tokens yet; create one with `atlas serve token create --account NAME`'
      : tokens
          .map(
            (t) =>
              `${t.id}  ${t.account.padEnd(20)}  ${t.created_at}${t.expires_at ? `  expires ${t.expires_at}` : ''}${t.read_only ? '  read-only' : ''}`,
          )
          .join('\n'),
  );
  return 0;
}
