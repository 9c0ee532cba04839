// A task's proof at a glance: each receipt's signature and its command's exit status shown apart,
// as three marks (passed ✓, failed !, invalid ✗), and the strict `atlas verify` policy's verdict.
import { html } from './html.js';

export interface Verification {
  ok: boolean;
  key_fingerprint: string | null;
  problems: string[];
  receipts: { receipt_id: string; valid: boolean; passed?: boolean; exit_code: number; problems: string[] }[];
  strict: { flags: string[]; ok: boolean; policies: { name: string; ok: boolean; detail: string }[] } | null;
}

type Row = Record<string, unknown>;
const s = (v: unknown) => (v === undefined || v === null ? '' : String(v));

/** passed: valid signature, exit 0; failed: valid signature, command failed; invalid: the signature or its files do not match. */
export function markOf(v: { valid: boolean; exit_code: number } | undefined): 'passed' | 'failed' | 'invalid' | 'unchecked' {
  if (!v) return 'unchecked';
  if (!v.valid) return 'invalid';
  return v.exit_code === 0 ? 'passed' : 'failed';
}

const MARKS = {
  passed: { icon: '✓', text: 'passed', cls: 'ok' },
  failed: { icon: '!', text: 'command failed', cls: 'warn' },
  invalid: { icon: '✗', text: 'invalid', cls: 'bad' },
  unchecked: { icon: '?', text: 'not checked', cls: 'meta' },
} as const;

export function ProofView({ receipts, verified }: { receipts: Row[]; verified: Verification | undefined }) {
  const summary = !verified
    ? 'Checking the receipts…'
    : !verified.key_fingerprint
      ? `Not verified: ${verified.problems.join('; ')}`
      : receipts.length === 0
        ? 'No receipts yet: nothing proves what this task ran.'
        : `${verified.ok ? 'Every signature is valid' : 'NOT every signature is valid'} (account key ${verified.key_fingerprint})${verified.problems.length ? `: ${verified.problems.join('; ')}` : ''}`;
  const strict = verified?.strict;
  return html`<section aria-labelledby="proof-title">
    <h2 id="proof-title">Proof</h2>
    <p class="meta" data-testid="proof-summary">${summary}</p>
    ${
      strict
        ? html`<p data-testid="strict" class=${strict.ok ? 'strict ok-box' : 'strict bad-box'}><strong>${strict.ok ? '✓ Strict policy met' : '✗ Strict policy not met'}</strong> <span class="meta">(<code>atlas verify ${strict.flags.join(' ')}</code>)</span>
      <ul>${strict.policies.map((p) => html`<li class=${p.ok ? 'ok' : 'bad'}>${p.ok ? '✓' : '✗'} <span class="policy-detail">${p.name}: ${p.detail}</span></li>`)}</ul></p>`
        : null
    }
    <ul data-testid="receipts" class="receipts">${receipts.map((r) => {
      const v = verified?.receipts.find((x) => x.receipt_id === r['receipt_id']);
      const mark = markOf(v);
      const look = MARKS[mark];
      return html`<li data-receipt=${s(r['receipt_id'])} data-mark=${mark}>
        <span class=${`mark ${look.cls}`} aria-label=${look.text} title=${look.text}>${look.icon}</span>
        <span class="receipt-facts">${s(r['step_name'])}: <code>${s(r['command'])}</code>
          <span class="chip">${v ? (v.valid ? 'signature ✓ valid' : 'signature ✗ invalid') : 'signature not checked'}</span>
          <span class=${`chip ${Number(r['exit_code']) === 0 ? 'chip-ok' : 'chip-bad'}`}>exit ${s(r['exit_code'])}${Number(r['exit_code']) === 0 ? ' (passed)' : ' (failed)'}</span>
          <span class="meta">${s(r['receipt_id'])}</span></span>
        ${v && !v.valid ? html`<div class="error">${v.problems.join('; ')}</div>` : null}
      </li>`;
    })}</ul>
  </section>`;
}
