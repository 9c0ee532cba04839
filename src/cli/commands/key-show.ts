// atlas key show: key files, permissions, fingerprints and derivation (never a private key).

import type { KeyInfo } from '../../crypto/key-info.js';
import { inspectKeys } from '../../crypto/key-info.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { CliContext } from '../context.js';

function render(info: KeyInfo): string {
  const m = info.master_key;
  const d = info.derivation;
  const lines = [`master key       ${m.path}`, `  present        ${m.exists ? 'yes' : 'no'}`];
  if (m.exists) {
    lines.push(`  permissions    ${m.ok ? 'ok (owner only)' : `NOT SAFE: ${m.problem ?? m.error ?? 'unusable'}`}`);
    if (m.fix) lines.push(`  fix            ${m.fix}`);
    if (m.fingerprint) lines.push(`  fingerprint    ${m.fingerprint}`);
    if (m.created_at) lines.push(`  created        ${m.created_at}`);
  }
  lines.push(
    `keys folder      ${info.keys_dir.path} (${!info.keys_dir.exists ? 'missing' : info.keys_dir.ok ? (m.exists ? 'ok, owner only' : 'ok: no master key here, so only writes by others would matter') : `NOT SAFE: ${info.keys_dir.problem}`})`,
  );
  if (info.keys_dir.fix) lines.push(`  fix            ${info.keys_dir.fix}`);
  lines.push(
    `derivation       purpose ${d.purpose}, coin_type ${d.coin_type}, account ${d.account} (config hooks.key_derivation)`,
    `account path     ${info.account.path}`,
    `receipt keys     ${info.receipt_key_path}`,
    `account xpub     ${info.account.xpub ?? '(none)'}`,
  );
  if (info.account.xpub_fingerprint) lines.push(`xpub fingerprint ${info.account.xpub_fingerprint}`);
  if (info.account.error) lines.push(`  problem        ${info.account.error}`);
  lines.push(`xpub file        ${info.account.file}`);
  if (info.account.file_matches_master === false) {
    lines.push('  warning        account.xpub is not the xpub of this master key and derivation; run `atlas init` to rewrite it');
  }
  if (info.next_task_index !== undefined) lines.push(`next task index  ${info.next_task_index}`);
  return lines.join('\n');
}

export default async function keyShow(ctx: CliContext): Promise<number> {
  const config = await ctx.config();
  const info = await inspectKeys(ctx.home, config.hooks.key_derivation);
  if (!info.master_key.exists && info.account.xpub === undefined) {
    throw new AtlasError(`no signing key in ${info.keys_dir.path}`, { exitCode: EXIT.key, hint: 'run `atlas init` to create one' });
  }
  ctx.out.result(info, () => render(info));
  const unsafe =
    (info.master_key.exists && !info.master_key.ok) || (info.keys_dir.exists && !info.keys_dir.ok) || info.account.error !== undefined;
  return unsafe ? EXIT.key : EXIT.ok;
}
