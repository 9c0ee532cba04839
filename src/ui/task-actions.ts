/// <reference lib="dom" />
// A task's actions, as the CLI has them, each confirmed first: approve, reject or retry with a
// note (reject and retry pass it on as `atlas resume --note` does: a retried agent step reads it
// in its next prompt), cancel, checkpoint, abandon.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import type { ColumnId } from './columns.js';
import { html } from './html.js';

const ACTIONS = [
  { id: 'approve', label: 'Approve', confirm: 'Approve the step waiting for a person? The task goes on.', when: 'waiting' },
  {
    id: 'reject',
    label: 'Reject',
    confirm: 'Reject the step waiting for a person? The task fails, with your note in its history.',
    when: 'waiting',
  },
  {
    id: 'retry',
    label: 'Retry with the note',
    confirm: "Run the failed step again? Your note goes to the agent's next attempt.",
    when: 'retry',
  },
  { id: 'cancel', label: 'Cancel', confirm: 'Cancel the running command? The task is checkpointed and parked.', when: 'running' },
  { id: 'checkpoint', label: 'Checkpoint', confirm: 'Checkpoint the task now?', when: 'any' },
  { id: 'abandon', label: 'Abandon', confirm: 'Abandon this task? This cannot be undone.', when: 'open' },
] as const;

export function TaskActions({
  path,
  column,
  failedStep,
  readOnly,
  onDone,
}: {
  path: string;
  column: ColumnId;
  failedStep: boolean;
  readOnly: boolean;
  onDone: (message: string) => void;
}) {
  const [note, setNote] = useState('');
  const usable = ACTIONS.filter(
    (a) =>
      a.when === 'any' ||
      a.when === column ||
      (a.when === 'retry' && column === 'waiting' && failedStep) ||
      (a.when === 'open' && !['completed', 'abandoned', 'failed'].includes(column)),
  );
  const act = async (a: (typeof ACTIONS)[number]) => {
    if (!window.confirm(a.confirm)) return;
    try {
      const withNote = a.id === 'approve' || a.id === 'reject' || a.id === 'retry' || a.id === 'abandon';
      const r = await api<{ action: string; state?: string | null }>(
        'POST',
        `${path}/${a.id}`,
        withNote && note.trim() ? { note: note.trim() } : {},
      );
      onDone(`${a.label}: done${r.state ? ` (${r.state})` : ''}`);
      setNote('');
    } catch (e) {
      onDone(`${a.label} refused: ${(e as Error).message}`);
    }
  };
  if (readOnly) return html`<p class="meta">Read-only sign-in: actions are off.</p>`;
  return html`<div class="actions-box">
    ${column === 'waiting' ? html`<label class="note">Note for the agent and the history (optional)<textarea name="note" rows="2" maxlength="2000" value=${note} onInput=${(e: Event) => setNote((e.target as HTMLTextAreaElement).value)} placeholder="what to change, or why"></textarea></label>` : null}
    <div class="actions" role="group" aria-label="Actions">
      ${usable.map((a) => html`<button type="button" data-action=${a.id} class=${a.id === 'approve' ? 'primary' : ''} onClick=${() => void act(a)}>${a.label}</button>`)}
    </div>
  </div>`;
}
