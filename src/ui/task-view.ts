/// <reference lib="dom" />
// A task's page: its state and steps (the hook's history), HOOK.md and output as text, its agent
// runs with tokens and cost, receipts, checkpoints, the diff, and the CLI's actions, each confirmed
// first. Live through the task's events.
import { useEffect, useState } from 'preact/hooks';
import type { StoredEvent, TaskDetail } from './api.js';
import { api } from './api.js';
import { columnOf, recoveryAdvice } from './columns.js';
import { html } from './html.js';
import { TaskConversations } from './task-conversations.js';

const ACTIONS = [
  { id: 'approve', label: 'Approve', confirm: 'Approve the step waiting for a person? The task goes on.', when: 'waiting' },
  { id: 'reject', label: 'Reject', confirm: 'Reject the step waiting for a person?', when: 'waiting' },
  { id: 'recover', label: 'Recover', confirm: 'Recover this task with the recommended action?', when: 'crashed' },
  { id: 'cancel', label: 'Cancel', confirm: 'Cancel the running command? The task is checkpointed and parked.', when: 'running' },
  { id: 'checkpoint', label: 'Checkpoint', confirm: 'Checkpoint the task now?', when: 'any' },
  { id: 'abandon', label: 'Abandon', confirm: 'Abandon this task? This cannot be undone.', when: 'open' },
] as const;

type Row = Record<string, unknown>;
const s = (v: unknown) => (v === undefined || v === null ? '' : String(v));

export function TaskView({ id }: { id: string }) {
  const [detail, setDetail] = useState<TaskDetail | undefined>();
  const [output, setOutput] = useState<StoredEvent[]>([]);
  const [hookMd, setHookMd] = useState('');
  const [diff, setDiff] = useState('');
  const [message, setMessage] = useState('');
  // Bumped (at most once a second) by the task's events: its conversations are read again.
  const [tick, setTick] = useState(0);
  const [verified, setVerified] = useState<{ ok: boolean; key_fingerprint: string | null; problems: string[]; receipts: { receipt_id: string; valid: boolean; problems: string[] }[] } | undefined>();
  const path = `/tasks/${encodeURIComponent(id)}`;
  const load = () => api<TaskDetail>('GET', path).then(setDetail, (e: Error) => setMessage(e.message));
  const verify = () => api<NonNullable<typeof verified>>('GET', `${path}/verify`).then(setVerified, () => setVerified(undefined));

  useEffect(() => {
    void load();
    void verify();
    api<string>('GET', `${path}/hook.md`).then((t) => setHookMd(String(t)), () => setHookMd(''));
    const loadDiff = () => api<{ diff: string; truncated: boolean }>('GET', `${path}/diff`).then((d) => setDiff(d.diff + (d.truncated ? '\n… (truncated)' : '')), () => setDiff(''));
    void loadDiff();
    const source = new EventSource(`${path}/events`);
    const onOutput = (e: MessageEvent) => {
      const data = JSON.parse(String(e.data)) as Row;
      setOutput((o) => [...o.slice(-499), { id: Number(e.lastEventId), type: 'output', at: s(data['at']), data }]);
    };
    source.addEventListener('output', onOutput as EventListener);
    // Bursts of events (a step's state changes, receipts, checkpoints) become one request, so a
    // busy task does not spend the account's request rate.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const soon = () => (timer ??= setTimeout(() => {
      timer = undefined;
      void load();
    }, 200));
    for (const t of ['state', 'finished', 'checkpoint', 'receipt', 'cancelled']) source.addEventListener(t, soon);
    // Receipts are verified again, and the diff (up to 2 MB) fetched, when a command has ended.
    source.addEventListener('finished', () => (void verify(), void loadDiff()));
    let ticker: ReturnType<typeof setTimeout> | undefined;
    const bump = () => (ticker ??= setTimeout(() => {
      ticker = undefined;
      setTick((n) => n + 1);
    }, 1000));
    for (const t of ['state', 'output', 'finished', 'checkpoint']) source.addEventListener(t, bump);
    return () => (source.close(), timer && clearTimeout(timer), ticker && clearTimeout(ticker));
  }, [id]);

  if (!detail) return html`<p>${message || 'Loading…'}</p>`;
  const { task, hook } = detail;
  const col = columnOf(task);
  const act = async (a: (typeof ACTIONS)[number]) => {
    if (!window.confirm(a.confirm)) return;
    try {
      const r = await api<{ action: string; state?: string | null }>('POST', `${path}/${a.id}`, {});
      setMessage(`${a.label}: done${r.state ? ` (${r.state})` : ''}`);
    } catch (e) {
      setMessage(`${a.label} refused: ${(e as Error).message}`);
    }
    void load();
  };
  const usable = ACTIONS.filter((a) => a.when === 'any' || a.when === col || (a.when === 'open' && !['completed', 'abandoned', 'failed'].includes(col)));
  const history = (hook['history'] as Row[] | undefined) ?? [];
  const receipts = (hook['receipts'] as Row[] | undefined) ?? [];
  const checkpoints = (hook['checkpoints'] as Row[] | undefined) ?? [];
  return html`<article aria-labelledby="task-title">
    <p><a href="#/">← Board</a></p>
    <h1 id="task-title">${task.description || task.id}</h1>
    <p class="meta">${task.id} · ${task.template} · <strong data-testid="task-state">${task.state}</strong> (${task.activity})${task.branch ? ` · ${task.branch}` : ''}</p>
    ${col === 'crashed' ? html`<p class="advice" role="note">${recoveryAdvice(task, hook)}</p>` : null}
    <div class="actions" role="group" aria-label="Actions">
      ${usable.map((a) => html`<button type="button" data-action=${a.id} onClick=${() => void act(a)}>${a.label}</button>`)}
    </div>
    ${message ? html`<p role="status" class="status">${message}</p>` : null}
    <h2>Steps</h2>
    <ol class="history">${history.map((e) => html`<li>${s(e['timestamp'])} · ${s(e['step_name']) || '—'}: ${s(e['from_state'])} → ${s(e['to_state'])} (${s(e['trigger'])})</li>`)}</ol>
    <h2>Output</h2>
    <pre class="output" data-testid="output">${output.map((e) => `${s(e.data['text'])}\n`).join('')}</pre>
    <${TaskConversations} path=${path} version=${tick} />
    <h2>Receipts</h2>
    ${verified ? html`<p class="meta">${verified.key_fingerprint ? `${verified.ok ? 'all valid' : 'NOT all valid'}, checked with the account key ${verified.key_fingerprint}` : 'not verified'}${verified.problems.length ? `: ${verified.problems.join('; ')}` : ''}</p>` : null}
    <ul data-testid="receipts">${receipts.map((r) => {
      const v = verified?.receipts.find((x) => x.receipt_id === r['receipt_id']);
      const mark = v ? (v.valid ? html`<span class="ok" aria-label="valid">✓</span>` : html`<span class="bad" aria-label="invalid">✗</span>`) : null;
      return html`<li data-receipt=${s(r['receipt_id'])}>${mark} ${s(r['step_name'])}: <code>${s(r['command'])}</code> exit ${s(r['exit_code'])} · ${s(r['receipt_id'])}${v && !v.valid ? html`<div class="error">${v.problems.join('; ')}</div>` : null}</li>`;
    })}</ul>
    <h2>Checkpoints</h2>
    <ul>${checkpoints.map((c) => html`<li>${s(c['created_at'])} · ${s(c['step_name'])}: ${s(c['description'])} <code>${s(c['git_commit']).slice(0, 12)}</code></li>`)}</ul>
    <h2>HOOK.md</h2>
    <pre class="hookmd" data-testid="hook-md">${hookMd || '(none)'}</pre>
    <h2>Diff</h2>
    <pre class="diff">${diff || '(no changes, or no base commit)'}</pre>
  </article>`;
}
