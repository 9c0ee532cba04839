// atlas serve token revoke <id>
import { revokeToken } from '../../server/accounts/tokens.js';
import type { CliContext } from '../context.js';

export default async function serveTokenRevoke(ctx: CliContext, id: string): Promise<number> {
  const removed = await revokeToken(ctx.home, id, (await ctx.config()).server.database);
  ctx.out.result({ revoked: removed.id, account: removed.account }, () => `revoked ${removed.id} (account ${removed.account})`);
  return 0;
}
