// `atlas verify` for people: each bad receipt named with why, policies, a summary. Also the
// --json shape (stable field names, documented in docs/keys-and-verification.md).
import { messageVersionOf, signsCommit } from '../domain/receipt.js';
import type { ReceiptResult } from './check.js';
import type { SetReport, VerifyReport } from './verify.js';

/** Sets with more receipts than this list only the bad ones. */
const LIST_ALL_UP_TO = 20;

function one(text: string, max = 70): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function receiptLine(r: ReceiptResult): string {
  const rc = r.receipt;
  const head = `${rc.receipt_id} #${r.index} ${one(rc.step_name, 30)}: ${one(rc.command)}`;
  if (!r.valid) return `  ✗ ${head}\n${r.problems.map((p) => `      ${p.message}`).join('\n')}`;
  const facts = [`exit ${rc.exit_code}`];
  if (signsCommit(rc)) facts.push(rc.git_commit ? `${rc.git_commit.slice(0, 12)}${rc.git_dirty ? ' dirty' : ''}` : 'no commit');
  else facts.push('v1');
  if (messageVersionOf(rc) >= 3) facts.push(`${rc.execution_mode}${rc.executable ? ` ${rc.executable}` : ' builtin'}`);
  // Which tree each receipt ran on: pristine (with where its dependencies came from) or the worktree.
  facts.push(
    messageVersionOf(rc) >= 4
      ? rc.validation_tree === 'pristine'
        ? `pristine tree, dependencies ${rc.dependencies}`
        : 'worktree'
      : 'worktree (not signed)',
  );
  for (const stream of ['stdout', 'stderr'] as const) if (r.artifacts[stream] === 'missing') facts.push(`${stream} file missing`);
  // A signature proves what ran and how it ended, not that it passed: a failing command is not a ✓.
  if (rc.exit_code !== 0) return `  ! ${head} (valid signature, command failed: ${facts.join(', ')})`;
  return `  ✓ ${head} (valid signature, passed: ${facts.join(', ')})`;
}

function setLines(set: SetReport): string[] {
  const invalid = set.results.filter((r) => !r.valid).length;
  const where = set.kind === 'task' ? (set.source === set.taskId ? '' : `, ${set.source}`) : `, ${set.source}`;
  const lines = [
    `${set.taskId} (task index ${set.taskIndex ?? '-'}${where}): ${set.results.length} receipt${set.results.length === 1 ? '' : 's'}${invalid ? `, ${invalid} invalid` : ''}`,
  ];
  for (const p of set.problems) lines.push(`  ✗ ${p}`);
  for (const n of set.notes) lines.push(`  note: ${n}`);
  if (set.results.length <= LIST_ALL_UP_TO) {
    for (const r of set.results) lines.push(receiptLine(r));
  } else {
    for (const r of set.results) if (!r.valid) lines.push(receiptLine(r));
    for (const r of set.results) if (r.valid && r.receipt.exit_code !== 0) lines.push(receiptLine(r));
    const passed = set.results.filter((r) => r.valid && r.receipt.exit_code === 0).length;
    if (passed > 0) lines.push(`  ✓ ${passed} receipts with a valid signature and a passing command`);
  }
  return lines;
}

export function renderVerifyText(report: VerifyReport): string {
  const lines: string[] = [];
  if (report.key.fingerprint !== '-') lines.push(`verifying with key ${report.key.fingerprint} (${report.key.source})`);
  if (report.attestation_key)
    lines.push(`attestations with key ${report.attestation_key.keyid.slice(0, 16)}… (${report.attestation_key.source})`);
  lines.push('');
  for (const set of report.sets) lines.push(...setLines(set), '');
  if (report.policies.length > 0) {
    lines.push('policies');
    for (const p of report.policies) lines.push(`  ${p.ok ? '✓' : '✗'} ${p.name}: ${p.detail}`);
    lines.push('');
  }
  const s = report.summary;
  const setProblems = report.sets.reduce((n, x) => n + x.problems.length, 0);
  const failed = report.sets.reduce((n, x) => n + x.results.filter((r) => r.valid && r.receipt.exit_code !== 0).length, 0);
  // Without --require-pass a failed command does not fail verify (exit 0), but it is never "OK".
  const verdict = !report.ok ? 'FAILED' : failed > 0 ? 'SIGNATURES VALID, COMMANDS FAILED' : 'OK';
  lines.push(
    `${verdict}: ${s.receipts} receipt${s.receipts === 1 ? '' : 's'} in ${s.tasks} task${s.tasks === 1 ? '' : 's'}, ${s.valid} valid${failed > 0 ? ` (${failed} valid signature, command failed)` : ''}, ${s.invalid} invalid` +
      (s.policies > 0 ? `; ${s.policies} polic${s.policies === 1 ? 'y' : 'ies'}, ${s.unmet} unmet` : '') +
      (setProblems > 0 ? `; ${setProblems} task problem${setProblems === 1 ? '' : 's'}` : ''),
  );
  return lines.join('\n');
}

export function verifyJson(report: VerifyReport) {
  return {
    ok: report.ok,
    key: report.key,
    ...(report.attestation_key ? { attestation_key: report.attestation_key } : {}),
    tasks: report.sets.map((set) => ({
      source: set.source,
      kind: set.kind,
      task_id: set.taskId,
      task_index: set.taskIndex ?? null,
      key_path_prefix: set.keyPathPrefix,
      problems: set.problems,
      notes: set.notes,
      receipts: set.results.map((r) => ({
        index: r.index,
        receipt_id: r.receipt.receipt_id,
        step_name: r.receipt.step_name,
        command: r.receipt.command,
        exit_code: r.receipt.exit_code,
        message_version: messageVersionOf(r.receipt),
        git_commit: r.receipt.git_commit ?? null,
        git_dirty: r.receipt.git_dirty ?? null,
        executable: r.receipt.executable ?? null,
        execution_mode: r.receipt.execution_mode ?? null,
        validation_tree: r.receipt.validation_tree ?? null,
        dependencies: r.receipt.dependencies ?? null,
        key_path: r.receipt.key_path,
        valid: r.valid,
        problems: r.problems,
        artifacts: r.artifacts,
      })),
    })),
    policies: report.policies,
    summary: report.summary,
  };
}
