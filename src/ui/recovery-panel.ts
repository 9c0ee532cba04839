/// <reference lib="dom" />
// Recovery from the browser (docs/ui.md): what happened, the last output, why atlas recommends
// what it does, and every action `atlas recover` offers with what it does. `manual` is never a
// dead end: it leaves the choice to the person, who takes one of the actions here.
import { stateText } from './format.js';
import { html } from './html.js';
import { OutputPane } from './output-pane.js';

export interface ActionOption {
  action: 'retry_step' | 'retry_from_checkpoint' | 'skip_step' | 'manual';
  unavailable?: string;
  effect: string;
}

export interface RecoveryPlan {
  diagnosed: boolean;
  recovery: {
    crash_type: string;
    last_known_state: string;
    was_validating: boolean;
    validation_cmd?: string;
    recommended_action: string;
    reason: string;
    last_checkpoint_id?: string;
  };
  last_output: string;
  options: ActionOption[];
}

const TITLES: Record<string, string> = {
  retry_step: 'Retry the step',
  retry_from_checkpoint: 'Retry from the checkpoint',
  skip_step: 'Skip the step',
  manual: 'Decide yourself',
};

const CRASHES: Record<string, string> = {
  signal: 'the process running it stopped (killed, or the machine went down)',
  timeout: 'it stopped answering (no heartbeat)',
  unknown: 'it stopped for a reason atlas could not tell',
};

export function RecoveryPanel({
  plan,
  readOnly,
  onRecover,
}: {
  plan: RecoveryPlan;
  readOnly: boolean;
  onRecover: (action: string, effect: string) => void;
}) {
  const r = plan.recovery;
  const manual = r.recommended_action === 'manual';
  const choices = plan.options.filter((o) => o.action !== 'manual');
  return html`<section class="recovery" aria-labelledby="recovery-title" data-testid="recovery">
    <h2 id="recovery-title">Recovery</h2>
    <dl class="facts">
      <dt>What happened</dt><dd data-testid="what-happened">While ${r.was_validating ? `validating${r.validation_cmd ? ` (${r.validation_cmd})` : ''}` : stateText(r.last_known_state)}, ${CRASHES[r.crash_type] ?? r.crash_type}.${plan.diagnosed ? '' : ' (What atlas recover would say now: it diagnoses again when it runs.)'}</dd>
      <dt>Recommended</dt><dd data-testid="recommended"><strong>${manual ? 'you choose' : (TITLES[r.recommended_action] ?? r.recommended_action)}</strong> (${r.recommended_action}): ${r.reason}</dd>
      ${r.last_checkpoint_id ? html`<dt>Last checkpoint</dt><dd><code>${r.last_checkpoint_id}</code></dd>` : null}
    </dl>
    <h3>Last output</h3>
    <${OutputPane} lines=${plan.last_output ? plan.last_output.split('\n') : []} label="Last output before it stopped" empty="(no output was recorded)" />
    <h3>${manual ? 'Choose how to go on' : 'Actions'}</h3>
    ${manual ? html`<p class="advice">atlas does not pick for you here: read what each action does, then choose one.</p>` : null}
    <ul class="options" data-testid="recovery-options">${choices.map(
      (o) => html`<li key=${o.action} data-option=${o.action} class=${o.action === r.recommended_action ? 'recommended' : ''}>
      <button type="button" data-recover=${o.action} disabled=${Boolean(o.unavailable) || readOnly} onClick=${() => onRecover(o.action, o.effect)} aria-describedby=${`effect-${o.action}`}>${TITLES[o.action]}${o.action === r.recommended_action ? ' (recommended)' : ''}</button>
      <span id=${`effect-${o.action}`} class="effect">${o.unavailable ? `Not available: ${o.unavailable}` : o.effect}</span>
    </li>`,
    )}
      <li data-option="manual"><span class="effect"><strong>Not now:</strong> leave the task as it is; it stays on the board until you choose.</span></li>
    </ul>
  </section>`;
}
