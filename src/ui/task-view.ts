/// <reference lib="dom" />
// A task's page: what it waits for (the approval prompt), its recovery or why it failed, its
// actions, its live output beside its agent's conversation, its steps, its proof, checkpoints,
// HOOK.md and the diff. Live through the task's events; the page is keyed by task id (main.ts), so
// nothing of another task's stream ever reaches it.
import { useEffect, useState } from 'preact/hooks';
import type { TaskDetail } from './api.js';
import { api } from './api.js';
import { columnOf } from './columns.js';
import { DiffView } from './diff-view.js';
import { duration, relativeTime, STATE_LOOK, stateText } from './format.js';
import { html } from './html.js';
import { MarkdownView } from './markdown-view.js';
import { OutputPane } from './output-pane.js';
import { usePage } from './page.js';
import type { Verification } from './proof-view.js';
import { ProofView } from './proof-view.js';
import type { RecoveryPlan } from './recovery-panel.js';
import { RecoveryPanel } from './recovery-panel.js';
import { TaskActions } from './task-actions.js';
import { TaskConversations } from './task-conversations.js';

type Row = Record<string, unknown>;
const s = (v: unknown) => (v === undefined || v === null ? '' : String(v));
/** Output lines kept on the page: the newest. */
const KEEP_LINES = 2000;

interface Diagnosis {
  recovery: RecoveryPlan | null;
  failure: { step_name: string | null; error: string; artifacts: string[]; last_output: string } | null;
  prompt: string | null;
}

/** Why the task waits in awaiting_human: the trigger that moved it there last. */
export function waitTrigger(history: Row[]): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i]!;
    if (e['to_state'] === 'awaiting_human' && e['from_state'] !== 'awaiting_human') return s(e['trigger']);
  }
  return undefined;
}

export function TaskView({ id, readOnly }: { id: string; readOnly: boolean }) {
  const [detail, setDetail] = useState<TaskDetail | undefined>();
  const [output, setOutput] = useState<string[]>([]);
  const [hookMd, setHookMd] = useState('');
  const [diff, setDiff] = useState<{ diff: string; truncated: boolean; untracked: string[] } | undefined>();
  const [diagnosis, setDiagnosis] = useState<Diagnosis | undefined>();
  const [message, setMessage] = useState('');
  const [error, setError] = useState('');
  // Bumped (at most once a second) by the task's events: its conversations are read again.
  const [tick, setTick] = useState(0);
  const [verified, setVerified] = useState<Verification | undefined>();
  const path = `/tasks/${encodeURIComponent(id)}`;
  const load = () => api<TaskDetail>('GET', path).then(setDetail, (e: Error) => setError(e.message));
  const verify = () => api<Verification>('GET', `${path}/verify`).then(setVerified, () => setVerified(undefined));
  const diagnose = () => api<Diagnosis>('GET', `${path}/diagnosis`).then(setDiagnosis, () => setDiagnosis(undefined));
  const readMd = () =>
    api<string>('GET', `${path}/hook.md`).then(
      (t) => setHookMd(String(t)),
      () => setHookMd(''),
    );
  const loadDiff = () =>
    api<{ diff: string; truncated: boolean; untracked: string[] }>('GET', `${path}/diff`).then(setDiff, () => setDiff(undefined));
  usePage(detail ? `${detail.task.description || detail.task.id}` : undefined);

  useEffect(() => {
    let alive = true;
    void load();
    void verify();
    void diagnose();
    void readMd();
    void loadDiff();
    const source = new EventSource(`${path}/events`);
    // Lines arrive one event each: they are gathered and drawn once per frame.
    let pending: string[] = [];
    let frame = 0;
    const onOutput = (e: MessageEvent) => {
      if (!alive) return;
      pending.push(s((JSON.parse(String(e.data)) as Row)['text']));
      frame ||= requestAnimationFrame(() => {
        frame = 0;
        const add = pending;
        pending = [];
        if (alive) setOutput((o) => [...o, ...add].slice(-KEEP_LINES));
      });
    };
    source.addEventListener('output', onOutput as EventListener);
    // Bursts of events (a step's state changes, receipts, checkpoints) become one request each.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const soon = () =>
      (timer ??= setTimeout(() => {
        timer = undefined;
        if (!alive) return;
        void load();
        void diagnose();
        void readMd();
      }, 200));
    for (const t of ['state', 'finished', 'checkpoint', 'receipt', 'cancelled']) source.addEventListener(t, soon);
    source.addEventListener('finished', () => alive && (void verify(), void loadDiff()));
    let ticker: ReturnType<typeof setTimeout> | undefined;
    const bump = () =>
      (ticker ??= setTimeout(() => {
        ticker = undefined;
        if (alive) setTick((n) => n + 1);
      }, 1000));
    for (const t of ['state', 'output', 'finished', 'checkpoint']) source.addEventListener(t, bump);
    return () => {
      alive = false;
      source.close();
      if (timer) clearTimeout(timer);
      if (ticker) clearTimeout(ticker);
      if (frame) cancelAnimationFrame(frame);
    };
  }, [id]);

  if (!detail)
    return html`<h1>${error ? 'Task not found' : 'Loading…'}</h1>${error ? html`<p class="error" role="alert">${error}</p><p><a href="#/">← Board</a></p>` : null}`;
  const { task, hook } = detail;
  const col = columnOf(task);
  const look = STATE_LOOK[col];
  const history = (hook['history'] as Row[] | undefined) ?? [];
  const receipts = (hook['receipts'] as Row[] | undefined) ?? [];
  const checkpoints = (hook['checkpoints'] as Row[] | undefined) ?? [];
  const step = hook['current_step'] as { started_at?: string; last_output?: string } | undefined;
  const failedStep = col === 'waiting' && waitTrigger(history) === 'step_failed';
  const lastOutput = s(step?.last_output);
  // Live lines when the page saw them; otherwise the last output the hook kept (an ended or crashed task).
  const lines = output.length ? output : lastOutput ? lastOutput.split('\n') : [];
  const done = (m: string) => {
    setMessage(m);
    void load();
    void diagnose();
  };
  const recover = async (action: string, effect: string) => {
    if (!window.confirm(`Recover with ${action}? This will ${effect}.`)) return;
    try {
      await api('POST', `${path}/recover`, { action });
      done(`Recovering with ${action}: follow it below.`);
    } catch (e) {
      done(`Recover refused: ${(e as Error).message}`);
    }
  };
  return html`<article aria-labelledby="task-title" class=${`task state-${col}`}>
    <p><a href="#/">← Board</a></p>
    <h1 id="task-title">${task.description || task.id}</h1>
    <p class="task-meta"><span class=${`badge badge-${col}`} data-testid="task-column"><span aria-hidden="true">${look.icon}</span> ${look.label}</span>
      <span class="meta"><strong data-testid="task-state">${task.state}</strong> · ${stateText(task.state, task.activity)} · step ${task.step}/${task.steps}${task.step_name ? ` (${task.step_name})` : ''}${step?.started_at && col === 'running' ? `, for ${duration(Date.now() - Date.parse(step.started_at))}` : ''} · ${task.template} · <code>${task.id}</code>${task.branch ? html` · <code>${task.branch}</code>` : null} · updated <time datetime=${task.updated_at} title=${task.updated_at}>${relativeTime(task.updated_at)}</time></span></p>
    ${diagnosis?.prompt ? html`<section class="approval" aria-labelledby="approval-title" data-testid="approval"><h2 id="approval-title">Waiting for your approval</h2><p class="prompt-text">${diagnosis.prompt}</p></section>` : null}
    ${failedStep ? html`<p class="advice" role="note">A step failed and the template asks a person: retry it (your note goes to the agent), approve it as done, or reject it.</p>` : null}
    ${col === 'crashed' && diagnosis?.recovery ? html`<${RecoveryPanel} plan=${diagnosis.recovery} readOnly=${readOnly} onRecover=${(a: string, e: string) => void recover(a, e)} />` : null}
    ${
      diagnosis?.failure
        ? html`<section class="failure" aria-labelledby="failure-title" data-testid="failure"><h2 id="failure-title">Why it failed</h2>
      <p>${diagnosis.failure.step_name ? html`Step <strong>${diagnosis.failure.step_name}</strong>: ` : null}<span data-testid="failure-error">${diagnosis.failure.error}</span></p>
      ${diagnosis.failure.artifacts.length ? html`<p>Output files: ${diagnosis.failure.artifacts.map((a) => html`<a class="artifact" href=${`${path}/artifact?path=${encodeURIComponent(a)}`} target="_blank" rel="noopener noreferrer">${a}</a> `)}</p>` : null}
    </section>`
        : null
    }
    <${TaskActions} path=${path} column=${col} failedStep=${failedStep} readOnly=${readOnly} onDone=${done} />
    ${message ? html`<p role="status" class="status">${message}</p>` : null}
    <div class="watch">
      <section aria-labelledby="output-title"><h2 id="output-title">Output</h2>
        <${OutputPane} lines=${lines} label=${`Output of ${task.id}`} empty="(no output yet)" /></section>
      <${TaskConversations} path=${path} version=${tick} />
    </div>
    <h2>Steps</h2>
    <ol class="history">${history.map((e) => html`<li><time datetime=${s(e['timestamp'])} title=${s(e['timestamp'])}>${relativeTime(s(e['timestamp']))}</time> · ${s(e['step_name']) || '—'}: ${stateText(s(e['from_state']) || 'new')} → ${stateText(s(e['to_state']))} <span class="meta">(${s(e['trigger']).replace(/_/g, ' ')})</span></li>`)}</ol>
    <${ProofView} receipts=${receipts} verified=${verified} />
    <h2>Checkpoints</h2>
    ${checkpoints.length ? html`<ul>${checkpoints.map((c) => html`<li><time datetime=${s(c['created_at'])} title=${s(c['created_at'])}>${relativeTime(s(c['created_at']))}</time> · ${s(c['step_name'])}: ${s(c['description'])} <code>${s(c['git_commit']).slice(0, 12)}</code></li>`)}</ul>` : html`<p class="meta">None yet.</p>`}
    <h2>Changes</h2>
    ${diff ? html`<${DiffView} diff=${diff.diff} truncated=${diff.truncated} untracked=${diff.untracked ?? []} />` : html`<p class="meta">No diff: no base commit to compare with.</p>`}
    <h2>HOOK.md</h2>
    ${hookMd ? html`<${MarkdownView} text=${hookMd} label="HOOK.md" />` : html`<p class="meta">(none yet)</p>`}
  </article>`;
}
