// Validates hook.json at the edge: what comes off disk is checked once, then trusted inside.
// Accepts exactly seed 003's shape (and Go's `null` for empty lists, normalised to []), keeps
// unknown fields so a newer writer's additions survive a round trip.

import type { StepCheckpoint } from './checkpoint.js';
import { isCheckpointTrigger } from './checkpoint.js';
import type { Hook, HookEvent } from './hook.js';
import { HOOK_SCHEMA_VERSION } from './hook.js';
import { isHookState } from './hook-state.js';
import type { ValidationReceipt } from './receipt.js';
import { MAX_CHILD_INDEX } from './receipt.js';
import type { RecoveryContext } from './recovery-context.js';
import { CRASH_TYPES, isRecoveryAction } from './recovery-context.js';
import type { StepContext } from './step-context.js';
import { truncateOutput } from './step-context.js';
import { isTimestamp } from './time.js';

export class HookFormatError extends Error {
  override name = 'HookFormatError';
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function obj(v: unknown, field: string): Obj {
  if (!isObj(v)) throw new HookFormatError(field, `expected an object, got ${describe(v)}`);
  return v;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'string' ? `"${v.length > 40 ? `${v.slice(0, 40)}…` : v}"` : typeof v;
}

function str(o: Obj, key: string, field: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw new HookFormatError(`${field}.${key}`, `expected a string, got ${describe(v)}`);
  return v;
}

function optStr(o: Obj, key: string, field: string): void {
  if (o[key] !== undefined && o[key] !== null && typeof o[key] !== 'string') {
    throw new HookFormatError(`${field}.${key}`, `expected a string, got ${describe(o[key])}`);
  }
  if (o[key] === null) delete o[key];
}

function time(o: Obj, key: string, field: string): string {
  const v = str(o, key, field);
  if (!isTimestamp(v)) throw new HookFormatError(`${field}.${key}`, `expected an RFC 3339 time, got ${describe(v)}`);
  return v;
}

function int(o: Obj, key: string, field: string, min = Number.MIN_SAFE_INTEGER): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    throw new HookFormatError(
      `${field}.${key}`,
      `expected an integer${min > Number.MIN_SAFE_INTEGER ? ` >= ${min}` : ''}, got ${describe(v)}`,
    );
  }
  return v;
}

function bool(o: Obj, key: string, field: string): boolean {
  const v = o[key];
  if (typeof v !== 'boolean') throw new HookFormatError(`${field}.${key}`, `expected true or false, got ${describe(v)}`);
  return v;
}

/** Lists are [] on disk; a Go writer's `null` or a missing list reads as []. */
function list(o: Obj, key: string, field: string): unknown[] {
  const v = o[key];
  if (v === undefined || v === null) {
    const empty: unknown[] = [];
    o[key] = empty;
    return empty;
  }
  if (!Array.isArray(v)) throw new HookFormatError(`${field}.${key}`, `expected a list, got ${describe(v)}`);
  return v;
}

function optStrList(o: Obj, key: string, field: string): void {
  const v = o[key];
  if (v === undefined) return;
  if (v === null) {
    delete o[key];
    return;
  }
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new HookFormatError(`${field}.${key}`, 'expected a list of strings');
  }
}

function checkStepContext(v: unknown, field: string): StepContext {
  const o = obj(v, field);
  str(o, 'step_name', field);
  int(o, 'step_index', field, 0);
  time(o, 'started_at', field);
  int(o, 'attempt', field, 1);
  int(o, 'max_attempts', field, 1);
  optStr(o, 'working_on', field);
  optStrList(o, 'files_touched', field);
  optStr(o, 'last_output', field);
  // Seed 003 caps it at 500 characters; a longer one (a foreign or hand-made hook) is cut on read.
  if (typeof o['last_output'] === 'string') o['last_output'] = truncateOutput(o['last_output']);
  optStr(o, 'current_checkpoint_id', field);
  return o as unknown as StepContext;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

/** Hot path (thousands of events per read): inline checks, helpers only to build the error. */
function checkEvent(v: unknown, field: string): HookEvent {
  if (!isObj(v)) return obj(v, field) as never;
  const ts = v['timestamp'];
  if (typeof ts !== 'string' || !TIMESTAMP.test(ts)) time(v, 'timestamp', field);
  const from = v['from_state'];
  if (from !== '' && !isHookState(from)) throw new HookFormatError(`${field}.from_state`, `unknown state ${describe(from)}`);
  const to = v['to_state'];
  if (to !== '' && !isHookState(to)) throw new HookFormatError(`${field}.to_state`, `unknown state ${describe(to)}`);
  if (typeof v['trigger'] !== 'string') str(v, 'trigger', field);
  const stepName = v['step_name'];
  if (stepName !== undefined && typeof stepName !== 'string') optStr(v, 'step_name', field);
  const details = v['details'];
  if (details === null) delete v['details'];
  else if (details !== undefined && !isObj(details)) obj(details, `${field}.details`);
  return v as unknown as HookEvent;
}

function checkCheckpoint(v: unknown, field: string): StepCheckpoint {
  const o = obj(v, field);
  const id = str(o, 'checkpoint_id', field);
  if (!/^ckpt-[0-9a-f]{8}$/.test(id))
    throw new HookFormatError(`${field}.checkpoint_id`, `expected ckpt- and 8 hex characters, got ${describe(id)}`);
  time(o, 'created_at', field);
  str(o, 'step_name', field);
  int(o, 'step_index', field, 0);
  str(o, 'description', field);
  if (!isCheckpointTrigger(o['trigger'])) throw new HookFormatError(`${field}.trigger`, `unknown trigger ${describe(o['trigger'])}`);
  str(o, 'git_branch', field);
  optStr(o, 'git_commit', field);
  bool(o, 'git_dirty', field);
  optStrList(o, 'artifacts', field);
  if (o['files_snapshot'] === null) delete o['files_snapshot'];
  if (o['files_snapshot'] !== undefined) {
    list(o, 'files_snapshot', field).forEach((s, i) => {
      const f = `${field}.files_snapshot[${i}]`;
      const so = obj(s, f);
      str(so, 'path', f);
      int(so, 'size', f, 0);
      str(so, 'mod_time', f);
      str(so, 'sha256', f);
      bool(so, 'exists', f);
    });
  }
  return o as unknown as StepCheckpoint;
}

/** The receipt fields that are always strings (seed 003's ValidationReceipt). */
export const RECEIPT_STRING_FIELDS: readonly string[] = [
  'receipt_id',
  'step_name',
  'command',
  'started_at',
  'completed_at',
  'duration',
  'stdout_hash',
  'stderr_hash',
  'key_path',
  'signature',
];

/** Receipts are checked for shape only here; cryptographic and format checks belong to verify. */
function checkReceipt(v: unknown, field: string): ValidationReceipt {
  const o = obj(v, field);
  for (const key of RECEIPT_STRING_FIELDS) {
    str(o, key, field);
  }
  int(o, 'exit_code', field);
  return o as unknown as ValidationReceipt;
}

function checkRecovery(v: unknown, field: string): RecoveryContext {
  const o = obj(v, field);
  time(o, 'detected_at', field);
  const crash = str(o, 'crash_type', field);
  if (!(CRASH_TYPES as readonly string[]).includes(crash))
    throw new HookFormatError(`${field}.crash_type`, `expected one of ${CRASH_TYPES.join(', ')}, got ${describe(crash)}`);
  if (!isHookState(o['last_known_state']))
    throw new HookFormatError(`${field}.last_known_state`, `unknown state ${describe(o['last_known_state'])}`);
  bool(o, 'was_validating', field);
  optStr(o, 'validation_cmd', field);
  optStr(o, 'partial_output', field);
  if (typeof o['partial_output'] === 'string') o['partial_output'] = truncateOutput(o['partial_output']);
  if (!isRecoveryAction(o['recommended_action']))
    throw new HookFormatError(`${field}.recommended_action`, `unknown action ${describe(o['recommended_action'])}`);
  str(o, 'reason', field);
  optStr(o, 'last_checkpoint_id', field);
  return o as unknown as RecoveryContext;
}

/**
 * Checks parsed JSON against seed 003's Hook shape and returns it typed. Mutates `data` only to
 * normalise null lists and null optionals; throws HookFormatError naming the first bad field.
 */
export function parseHook(data: unknown): Hook {
  const o = obj(data, 'hook');
  str(o, 'version', 'hook');
  const schema = str(o, 'schema_version', 'hook');
  const major = Number.parseInt(schema, 10);
  if (!Number.isFinite(major) || major > Number.parseInt(HOOK_SCHEMA_VERSION, 10)) {
    throw new HookFormatError(
      'hook.schema_version',
      `"${schema}" is newer than this atlas understands (${HOOK_SCHEMA_VERSION}); upgrade atlas`,
    );
  }
  str(o, 'task_id', 'hook');
  str(o, 'workspace_id', 'hook');
  time(o, 'created_at', 'hook');
  time(o, 'updated_at', 'hook');
  if (!isHookState(o['state'])) throw new HookFormatError('hook.state', `unknown state ${describe(o['state'])}`);
  if (o['current_step'] === null) delete o['current_step'];
  if (o['current_step'] !== undefined) checkStepContext(o['current_step'], 'hook.current_step');
  for (const [i, e] of list(o, 'history', 'hook').entries()) checkEvent(e, `hook.history[${i}]`);
  if (o['recovery'] === null) delete o['recovery'];
  if (o['recovery'] !== undefined) checkRecovery(o['recovery'], 'hook.recovery');
  for (const [i, c] of list(o, 'checkpoints', 'hook').entries()) checkCheckpoint(c, `hook.checkpoints[${i}]`);
  for (const [i, r] of list(o, 'receipts', 'hook').entries()) checkReceipt(r, `hook.receipts[${i}]`);
  if (o['task_index'] !== undefined) {
    const index = int(o, 'task_index', 'hook', 0);
    if (index > MAX_CHILD_INDEX)
      throw new HookFormatError('hook.task_index', `expected 0..${MAX_CHILD_INDEX} (a key derivation index), got ${index}`);
  }
  return o as unknown as Hook;
}

const TAIL_FIELDS: ReadonlySet<string> = new Set(['last_output', 'partial_output']);

/** No text field of a hook needs more; anything longer is cut on read (see truncateLongStrings). */
export const MAX_HOOK_STRING_LENGTH = 10_000;

/**
 * Cuts every string in parsed JSON longer than `max` to its first `max` characters, in place, and
 * returns the paths of the fields it cut. A string longer than `max` needs a text at least that
 * long, so callers skip this walk for smaller files.
 */
export function truncateLongStrings(data: unknown, max = MAX_HOOK_STRING_LENGTH): string[] {
  const cut: string[] = [];
  const walk = (node: unknown, path: string): void => {
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const v = node[i];
        if (typeof v === 'string') {
          if (v.length > max) {
            node[i] = `${v.slice(0, max)}…`;
            cut.push(`${path}[${i}]`);
          }
        } else if (typeof v === 'object' && v !== null) walk(v, `${path}[${i}]`);
      }
      return;
    }
    const o = node as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      const v = o[key];
      if (typeof v === 'string') {
        if (v.length > max) {
          // Output fields keep their end (what a resumed session needs), the others their start.
          o[key] = TAIL_FIELDS.has(key) ? `…${v.slice(-max)}` : `${v.slice(0, max)}…`;
          cut.push(`${path}.${key}`);
        }
      } else if (typeof v === 'object' && v !== null) walk(v, `${path}.${key}`);
    }
  };
  if (typeof data === 'object' && data !== null) walk(data, 'hook');
  return cut;
}
