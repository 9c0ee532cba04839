// What `atlas verify` requires beyond valid receipts (docs/keys-and-verification.md, "Policies").
// Pure: works on receipts already checked. Only valid receipts count toward a policy, and only
// version-2 receipts for anything their version-1 message does not sign (step name, commit).
import type { ValidationReceipt } from './receipt.js';
import { messageVersionOf, signsCommit } from './receipt.js';

export interface VerifyPolicies {
  /** Each needs a passing, valid, version-2 receipt of that step. */
  requireSteps: string[];
  /** Full commit id: only version-2 receipts made on it with a clean tree count. */
  commit?: string;
  /**
   * Commits whose tree is `commit`'s except for the receipt bundles themselves (the commit that
   * adds a bundle comes after the one it proves): receipts made on them count as made on `commit`.
   * Maps each to the bundle files that differ.
   */
  equivalentCommits?: ReadonlyMap<string, string[]>;
  /** Commits receipts were made on that the repository does not have (shallow clone). */
  unknownCommits?: string[];
  /** The last receipt of each distinct command (per task) passed. */
  requirePass: boolean;
  /** Each needs a valid receipt of exactly this command whose last run (in scope) passed. */
  requireCommands?: RequiredCommand[];
  /** Accept input with no receipts at all (otherwise "nothing to verify" fails). */
  allowEmpty?: boolean;
  /** Every valid receipt in scope was made in sandbox mode (version 3, execution_mode signed). */
  requireSandbox?: boolean;
  /** Every valid receipt in scope ran on a pristine tree (version 4, validation_tree signed). */
  requirePristine?: boolean;
  /** No task's last control review (CONTROL_REVIEW_COMMAND) left control-path changes unapproved. */
  requireControlReview?: boolean;
}

/**
 * The command of the receipts atlas signs when it inspects what a sandboxed step brought in
 * (src/engine/control-receipt.ts): exit 0 when every control-path change was approved or allowed
 * by the template, 1 while some wait for a person. They prove no validation: the policies about
 * validation receipts leave them out.
 */
export const CONTROL_REVIEW_COMMAND = 'atlas control-review';
export const CONTROL_REVIEW_STEP = 'atlas:control-review';

export function isControlReview(r: ValidationReceipt): boolean {
  return r.command === CONTROL_REVIEW_COMMAND && r.step_name === CONTROL_REVIEW_STEP;
}

/** Per task, the last valid control review must have passed (approved, allowed, or nothing found). */
function controlReviewPolicy(tasks: CheckedTask[]): PolicyResult {
  const waiting: string[] = [];
  let reviewed = 0;
  for (const task of tasks) {
    const reviews = task.receipts.filter((c) => c.valid && isControlReview(c.receipt)).map((c) => c.receipt);
    const last = reviews.sort((a, b) => Date.parse(a.completed_at) - Date.parse(b.completed_at))[reviews.length - 1];
    if (!last) continue;
    reviewed++;
    if (last.exit_code !== 0) waiting.push(`${task.taskId}: control-path changes no person approved (${last.receipt_id})`);
  }
  const detail =
    waiting.length > 0
      ? waiting.join('; ')
      : reviewed > 0
        ? `every control-path change of ${plural(reviewed, 'task')} was approved by a person or allowed by its template`
        : 'no task changed control paths (control reviews are signed in sandbox mode only: combine with --require-sandbox)';
  return { policy: 'require-control-review', name: '--require-control-review', ok: waiting.length === 0, detail };
}

export interface RequiredCommand {
  command: string;
  /** Who asks for it: "--require-command", or ".atlas/config.yaml at <commit>". */
  source: string;
}

export interface CheckedReceipt {
  receipt: ValidationReceipt;
  valid: boolean;
}

export interface CheckedTask {
  taskId: string;
  receipts: CheckedReceipt[];
}

export type PolicyName =
  | 'receipts'
  | 'commit'
  | 'require-step'
  | 'require-command'
  | 'require-pass'
  | 'require-sandbox'
  | 'require-pristine'
  | 'require-control-review';

export interface PolicyResult {
  policy: PolicyName;
  /** e.g. "--require-step validate". */
  name: string;
  ok: boolean;
  detail: string;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function onCommit(receipt: ValidationReceipt, policies: VerifyPolicies): boolean {
  if (!signsCommit(receipt) || receipt.git_dirty !== false || receipt.git_commit === undefined) return false;
  return receipt.git_commit === policies.commit || (policies.equivalentCommits?.has(receipt.git_commit) ?? false);
}

/** Why the valid receipts that are not on `commit` (clean, version 2) don't count. */
function commitMisses(valid: ValidationReceipt[], policies: VerifyPolicies): string[] {
  const commit = policies.commit!;
  let v1 = 0;
  let dirty = 0;
  let none = 0;
  const others = new Set<string>();
  for (const r of valid) {
    if (!signsCommit(r)) v1++;
    else if (r.git_commit === undefined) none++;
    else if (r.git_commit !== commit && !policies.equivalentCommits?.has(r.git_commit)) others.add(r.git_commit.slice(0, 12));
    else if (r.git_dirty !== false) dirty++;
  }
  const parts: string[] = [];
  if (others.size > 0) parts.push(`receipts made on other commits (${[...others].slice(0, 3).join(', ')}${others.size > 3 ? ', …' : ''})`);
  if (dirty > 0) parts.push(`${plural(dirty, 'receipt')} on this commit with uncommitted changes`);
  if (none > 0) parts.push(`${plural(none, 'receipt')} made before the first commit`);
  if (v1 > 0) parts.push(`${plural(v1, 'version-1 receipt')} (no commit signed)`);
  const unknown = policies.unknownCommits ?? [];
  if (unknown.length > 0)
    parts.push(
      `${unknown.map((c) => c.slice(0, 12)).join(', ')} not in this clone, so not compared (fetch more history, e.g. fetch-depth: 2)`,
    );
  return parts;
}

/** The command's receipts in scope, by completion time: the last one must have passed. */
function commandPolicy(required: RequiredCommand, scoped: ValidationReceipt[], scopeText: string): PolicyResult {
  const want = required.command.trim();
  const runs = scoped.filter((r) => r.command.trim() === want).sort((a, b) => Date.parse(a.completed_at) - Date.parse(b.completed_at));
  const last = runs[runs.length - 1];
  const name =
    required.source === '--require-command' ? `--require-command ${JSON.stringify(want)}` : `${JSON.stringify(want)} (${required.source})`;
  let detail: string;
  if (last === undefined) {
    const others = [...new Set(scoped.map((r) => r.command))];
    detail = `no valid receipt of \`${want}\`${scopeText}${
      others.length > 0
        ? `; receipts are for ${others
            .slice(0, 4)
            .map((c) => `\`${c}\``)
            .join(', ')}${others.length > 4 ? ', …' : ''}`
        : ''
    }`;
  } else if (last.exit_code === 0) {
    detail = `\`${want}\` passed${scopeText} (${last.receipt_id}${runs.length > 1 ? `, the last of ${runs.length} runs` : ''})`;
  } else {
    detail = `the last run of \`${want}\`${scopeText} exited ${last.exit_code} (${last.receipt_id})`;
  }
  return { policy: 'require-command', name, ok: last?.exit_code === 0, detail };
}

/** Sandbox mode counts only where the receipt signs it (version 3); older receipts name no mode. */
function sandboxPolicy(scoped: ValidationReceipt[], scopeText: string): PolicyResult {
  const outside = scoped.filter((r) => messageVersionOf(r) < 3 || r.execution_mode !== 'sandbox');
  const describe = (r: ValidationReceipt) =>
    `${r.receipt_id} (${messageVersionOf(r) < 3 ? `version ${messageVersionOf(r)}: no mode signed` : (r.execution_mode ?? 'no mode')})`;
  let detail: string;
  if (scoped.length === 0) detail = `no valid receipts${scopeText} to check`;
  else if (outside.length === 0)
    detail = `all ${plural(scoped.length, 'valid receipt')}${scopeText} were made in the sandbox (signed execution_mode)`;
  else
    detail = `${plural(outside.length, 'receipt')}${scopeText} not made in the sandbox: ${outside.slice(0, 5).map(describe).join(', ')}${outside.length > 5 ? ', …' : ''}`;
  return { policy: 'require-sandbox', name: '--require-sandbox', ok: scoped.length > 0 && outside.length === 0, detail };
}

/** A pristine tree counts only where the receipt signs it (version 4). */
function pristinePolicy(scoped: ValidationReceipt[], scopeText: string): PolicyResult {
  const outside = scoped.filter((r) => messageVersionOf(r) < 4 || r.validation_tree !== 'pristine');
  const describe = (r: ValidationReceipt) =>
    `${r.receipt_id} (${messageVersionOf(r) < 4 ? `version ${messageVersionOf(r)}: no tree signed` : `${r.validation_tree ?? 'no'} tree`})`;
  let detail: string;
  if (scoped.length === 0) detail = `no valid receipts${scopeText} to check`;
  else if (outside.length === 0)
    detail = `all ${plural(scoped.length, 'valid receipt')}${scopeText} ran on a pristine tree (signed validation_tree)`;
  else
    detail = `${plural(outside.length, 'receipt')}${scopeText} not run on a pristine tree: ${outside.slice(0, 5).map(describe).join(', ')}${outside.length > 5 ? ', …' : ''}`;
  return { policy: 'require-pristine', name: '--require-pristine', ok: scoped.length > 0 && outside.length === 0, detail };
}

export function evaluatePolicies(tasks: CheckedTask[], policies: VerifyPolicies): PolicyResult[] {
  const results: PolicyResult[] = [];
  const all = tasks.flatMap((t) => t.receipts);
  const valid = all.filter((c) => c.valid && !isControlReview(c.receipt)).map((c) => c.receipt);
  const invalid = all.filter((c) => !c.valid).length;
  const commit = policies.commit;
  const inScope = (r: ValidationReceipt) => commit === undefined || onCommit(r, policies);
  const scoped = valid.filter(inScope);
  const scopeText = commit ? ` on ${commit.slice(0, 12)}` : '';

  if (all.length === 0 && !policies.allowEmpty) {
    // An empty bundle proves nothing; passing it would let a pipeline that lost its receipts pass.
    results.push({
      policy: 'receipts',
      name: 'receipts to verify',
      ok: false,
      detail: `nothing to verify: ${tasks.length === 0 ? 'no tasks' : `${plural(tasks.length, 'task')} without receipts`} (--allow-empty accepts this)`,
    });
  }

  if (commit !== undefined) {
    const misses = commitMisses(valid, policies);
    const via = [...new Set(scoped.map((r) => r.git_commit!).filter((c) => c !== commit))];
    const viaText =
      via.length > 0
        ? ` (made on ${via.map((c) => c.slice(0, 12)).join(', ')}, whose tree differs only in ${[...new Set(via.flatMap((c) => policies.equivalentCommits!.get(c)!))].join(', ')})`
        : '';
    results.push({
      policy: 'commit',
      name: `--commit ${commit.slice(0, 12)}`,
      ok: scoped.length > 0,
      detail:
        scoped.length > 0
          ? `${plural(scoped.length, 'valid receipt')} made on ${commit} with a clean tree${viaText}`
          : `no valid receipt was made on ${commit} with a clean tree${misses.length > 0 ? `: ${misses.join('; ')}` : ''}${invalid > 0 ? ` (${plural(invalid, 'invalid receipt')} not counted)` : ''}`,
    });
  }

  for (const step of policies.requireSteps) {
    const ofStep = scoped.filter((r) => r.step_name === step);
    const signed = ofStep.filter((r) => signsCommit(r));
    const passing = signed.filter((r) => r.exit_code === 0);
    let detail: string;
    if (passing.length > 0) {
      detail = `${plural(passing.length, 'passing receipt')} for step ${step}${scopeText}`;
    } else {
      const notes: string[] = [];
      if (signed.length > 0)
        notes.push(`${plural(signed.length, 'receipt')} failed (last exit code ${signed[signed.length - 1]!.exit_code})`);
      if (ofStep.length > signed.length)
        notes.push(`${plural(ofStep.length - signed.length, 'version-1 receipt')} not counted: their step name is not signed`);
      if (ofStep.length === 0) notes.push(`no valid receipt of step ${step}${scopeText}`);
      detail = `no passing receipt for step ${step}${scopeText}: ${notes.join('; ')}`;
    }
    results.push({ policy: 'require-step', name: `--require-step ${step}`, ok: passing.length > 0, detail });
  }

  for (const required of policies.requireCommands ?? []) results.push(commandPolicy(required, scoped, scopeText));
  if (policies.requireSandbox) results.push(sandboxPolicy(scoped, scopeText));
  if (policies.requirePristine) results.push(pristinePolicy(scoped, scopeText));
  if (policies.requireControlReview) results.push(controlReviewPolicy(tasks));

  if (policies.requirePass) {
    const failing: string[] = [];
    let commands = 0;
    for (const task of tasks) {
      const last = new Map<string, ValidationReceipt>();
      for (const c of task.receipts) if (c.valid && inScope(c.receipt)) last.set(c.receipt.command, c.receipt);
      commands += last.size;
      for (const r of last.values()) {
        if (r.exit_code !== 0)
          failing.push(`\`${r.command}\` exited ${r.exit_code} (${r.receipt_id}${tasks.length > 1 ? ` in ${task.taskId}` : ''})`);
      }
    }
    const ok = commands > 0 && failing.length === 0;
    results.push({
      policy: 'require-pass',
      name: '--require-pass',
      ok,
      detail:
        commands === 0
          ? `no valid receipts${scopeText} to check`
          : failing.length === 0
            ? `the last run of each of ${plural(commands, 'command')}${scopeText} passed`
            : `last run failed: ${failing.join('; ')}`,
    });
  }
  return results;
}
