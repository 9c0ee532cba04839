// Choosing how to recover: with a terminal, a prompt with the recommended action preselected;
// in scripts, --action A or --yes (the recommendation). @inquirer/prompts is imported only when a
// prompt is really shown.
import { AtlasError, EXIT } from '../domain/errors.js';
import type { RecoveryAction } from '../domain/recovery-context.js';
import { isRecoveryAction, RECOVERY_ACTIONS } from '../domain/recovery-context.js';
import type { Diagnosis } from './diagnose.js';
import { optionsOf } from './render.js';

export interface SelectChoice<V> {
  value: V;
  name: string;
  description?: string;
  disabled?: boolean | string;
}

/** The shape of @inquirer/prompts' select (injectable for tests). */
export type SelectFn = <V>(config: { message: string; choices: SelectChoice<V>[]; default?: V; pageSize?: number }) => Promise<V>;

async function inquirerSelect(): Promise<SelectFn> {
  const { select } = await import('@inquirer/prompts');
  return select as unknown as SelectFn;
}

/** Ctrl+C or Esc at a prompt: treated as "abort", never as an error. */
export function isPromptAbort(error: unknown): boolean {
  const name = (error as { name?: string } | undefined)?.name;
  return name === 'ExitPromptError' || name === 'AbortPromptError' || name === 'CancelPromptError';
}

const ABORT = 'abort' as const;

/** Asks which action to take, the recommended one preselected; undefined = abort. */
export async function chooseAction(d: Diagnosis, select?: SelectFn): Promise<RecoveryAction | undefined> {
  const ask = select ?? (await inquirerSelect());
  const recommended = d.recovery.recommended_action;
  const choices: SelectChoice<RecoveryAction | typeof ABORT>[] = optionsOf(d).map((o) => ({
    value: o.action,
    name: o.action === recommended ? `${o.action} (recommended)` : o.action,
    ...(o.unavailable ? { disabled: o.unavailable } : { description: o.effect }),
  }));
  choices.push({ value: ABORT, name: 'abort', description: `leave the task as it is (${d.hook.state}); run atlas recover again later` });
  try {
    const chosen = await ask({ message: `Recover ${d.ref.id} how?`, choices, default: recommended, pageSize: choices.length });
    return chosen === ABORT ? undefined : chosen;
  } catch (error) {
    if (isPromptAbort(error)) return undefined;
    throw error;
  }
}

export interface ActionPolicy {
  /** --action, as typed. */
  action?: string;
  /** --yes: take the recommendation without asking. */
  yes?: boolean;
  /** A person is at a terminal (stdin and stdout are TTYs, and not --json). */
  interactive: boolean;
  /** For tests: the prompt. */
  select?: SelectFn;
}

/** Turns --action/--yes/TTY into recoverTask's `action` or `choose`. Throws on an unknown action. */
export function actionFromFlags(policy: ActionPolicy): {
  action?: RecoveryAction;
  choose?: (d: Diagnosis) => Promise<RecoveryAction | undefined>;
} {
  if (policy.action !== undefined) {
    if (!isRecoveryAction(policy.action)) {
      throw new AtlasError(`unknown recovery action "${policy.action}"`, {
        exitCode: EXIT.input,
        hint: `--action takes one of ${RECOVERY_ACTIONS.join(', ')}`,
      });
    }
    return { action: policy.action };
  }
  if (policy.yes) return {};
  if (policy.interactive) return { choose: (d) => chooseAction(d, policy.select) };
  return {
    choose: async (d) => {
      throw new AtlasError(`task ${d.ref.id} needs a recovery decision and atlas cannot ask (no terminal, or --json)`, {
        exitCode: EXIT.input,
        hint: `pass --yes to take the recommendation (${d.recovery.recommended_action}) or --action ${RECOVERY_ACTIONS.join('|')}`,
      });
    },
  };
}
