// What `atlas verify` was given, as sets of receipts: a hook.json (or a task folder), a task id
// under ATLAS_HOME, or a receipt bundle; by default the task of the current directory. Anything
// unreadable or malformed is an AtlasError with exit 2 (verify's contract).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import { HookFormatError, parseHook } from '../domain/hook-schema.js';
import type { KeyDerivation, ValidationReceipt } from '../domain/receipt.js';
import { isChildIndex } from '../domain/receipt.js';
import type { Task } from '../domain/task.js';
import { TASK_ID_PATTERN } from '../domain/task.js';
import { resolveTask } from '../hook/resolve-task.js';
import { taskFiles } from '../store/paths.js';
import { findTaskRef } from '../store/task-store.js';
import type { AttestationCheck } from './attestation-read.js';
import { isEnvelope, readAttestationFile } from './attestation-read.js';
import { BUNDLE_FORMAT, parseBundle } from './bundle.js';

export type InputKind = 'hook' | 'task' | 'bundle' | 'attestation';

export interface ReceiptSet {
  /** What the user passed (path or task id), for messages. */
  source: string;
  kind: InputKind;
  taskId: string;
  /** Undefined only when there are no receipts. */
  taskIndex: number | undefined;
  derivation: KeyDerivation;
  receipts: ValidationReceipt[];
  /** Folder the artifact paths are relative to; undefined: artifacts are not checked. */
  artifactsBase: string | undefined;
  /** For bundles: the xpub fingerprint the exporter recorded. */
  claimedFingerprint?: string;
  /** For bundles and attestations: the file's absolute path. */
  file?: string;
  /** For attestations: what the envelope's signature covers and the statement's own problems. */
  attestation?: AttestationCheck;
}

export interface LoadInputsOptions {
  cwd: string;
  home: string;
  /** The key derivation of this machine's configuration (for hook.json and task inputs). */
  derivation: KeyDerivation;
  /** For bundles: a folder holding the tasks' artifacts (`<dir>/<task-id>/artifacts/...` or `<dir>/artifacts/...`). */
  artifactsDir?: string;
}

function inputError(message: string, hint?: string, cause?: unknown): AtlasError {
  return new AtlasError(message, { exitCode: EXIT.input, ...(hint ? { hint } : {}), ...(cause ? { cause } : {}) });
}

function readText(path: string, label: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw inputError(`cannot read ${label}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, undefined, error);
  }
}

function notJson(label: string, error: unknown): AtlasError {
  return inputError(
    `${label} is not valid JSON: ${(error as Error).message}`,
    'pass a hook.json, a task id, a bundle from `atlas receipts export` or its `--format in-toto` envelopes',
    error,
  );
}

function readJson(path: string, label: string): unknown {
  const text = readText(path, label);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw notJson(label, error);
  }
}

/** JSON Lines whose first line is a DSSE envelope (`.intoto.jsonl`). */
function firstLineIsEnvelope(text: string): boolean {
  const first = text.split('\n').find((l) => l.trim().length > 0);
  try {
    return first !== undefined && isEnvelope(JSON.parse(first));
  } catch {
    return false;
  }
}

function readTaskBeside(hookPath: string): Task | undefined {
  const path = join(dirname(hookPath), 'task.json');
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Task;
  } catch {
    return undefined;
  }
}

function hookSet(hook: Hook, hookPath: string, source: string, kind: InputKind, derivation: KeyDerivation): ReceiptSet {
  const taskIndex = hook.task_index ?? readTaskBeside(hookPath)?.task_index;
  if (taskIndex !== undefined && !isChildIndex(taskIndex)) {
    throw inputError(`${source}: task_index ${taskIndex} is not a key derivation index (0..2147483647)`);
  }
  if (taskIndex === undefined && hook.receipts.length > 0) {
    throw inputError(
      `${source}: task ${hook.task_id} has receipts but no task_index, so their key paths cannot be checked`,
      'export a bundle on the machine that ran the task (`atlas receipts export`)',
    );
  }
  return {
    source,
    kind,
    taskId: hook.task_id,
    taskIndex,
    derivation,
    receipts: hook.receipts,
    artifactsBase: dirname(hookPath),
  };
}

function parseHookAt(data: unknown, label: string): Hook {
  try {
    return parseHook(data);
  } catch (error) {
    if (error instanceof HookFormatError)
      throw inputError(`${label} is not a valid hook: ${error.message}`, 'see docs/hook-format.md', error);
    throw error;
  }
}

function bundleArtifactsBase(dir: string | undefined, taskId: string): string | undefined {
  if (!dir) return undefined;
  const perTask = join(dir, taskId);
  return existsSync(perTask) ? perTask : dir;
}

function attestationSets(text: string, parsed: unknown, path: string, source: string, options: LoadInputsOptions): ReceiptSet[] {
  return readAttestationFile(text, parsed, source).map((a) => ({
    source,
    kind: 'attestation' as const,
    taskId: a.taskId,
    taskIndex: a.taskIndex,
    derivation: options.derivation,
    receipts: a.receipts,
    artifactsBase: bundleArtifactsBase(options.artifactsDir, a.taskId),
    file: path,
    attestation: a.attestation,
  }));
}

function loadFile(path: string, source: string, options: LoadInputsOptions): ReceiptSet[] {
  const text = readText(path, source);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    if (firstLineIsEnvelope(text)) return attestationSets(text, undefined, path, source, options);
    throw notJson(source, error);
  }
  if (isEnvelope(data)) return attestationSets(text, data, path, source, options);
  if (typeof data === 'object' && data !== null && (data as Record<string, unknown>)['format'] === BUNDLE_FORMAT) {
    const bundle = parseBundle(data, source);
    return bundle.tasks.map((t) => ({
      source,
      kind: 'bundle' as const,
      taskId: t.task_id,
      taskIndex: t.task_index ?? undefined,
      derivation: bundle.key_derivation,
      receipts: t.receipts,
      artifactsBase: bundleArtifactsBase(options.artifactsDir, t.task_id),
      claimedFingerprint: bundle.xpub_fingerprint,
      file: path,
    }));
  }
  if (typeof data === 'object' && data !== null && 'receipts' in data && 'task_id' in data) {
    return [hookSet(parseHookAt(data, source), path, source, 'hook', options.derivation)];
  }
  throw inputError(
    `${source} is neither a hook.json, a receipt bundle nor an attestation`,
    'pass a hook.json, a task id, a bundle from `atlas receipts export` or its `--format in-toto` envelopes',
  );
}

function loadTaskDir(dir: string, source: string, kind: InputKind, options: LoadInputsOptions): ReceiptSet {
  const hookPath = taskFiles(dir).hook;
  if (!existsSync(hookPath)) throw inputError(`${source} has no hook.json`, 'pass a hook.json, a task id or a bundle');
  return hookSet(parseHookAt(readJson(hookPath, hookPath), hookPath), hookPath, source, kind, options.derivation);
}

export function loadReceiptSets(paths: string[], options: LoadInputsOptions): ReceiptSet[] {
  if (paths.length === 0) {
    let found: ReturnType<typeof resolveTask>;
    try {
      found = resolveTask({ cwd: options.cwd, home: options.home, includeEnded: true });
    } catch (error) {
      throw inputError(`cannot find the task of this directory: ${(error as Error).message}`, undefined, error);
    }
    if (!found) {
      throw inputError('no atlas task for this directory', 'pass a bundle (`atlas verify receipts.json`), a hook.json or a task id');
    }
    return [loadTaskDir(found.ref.dir, found.ref.id, 'task', options)];
  }
  const sets: ReceiptSet[] = [];
  for (const arg of paths) {
    const path = resolve(options.cwd, arg);
    if (existsSync(path)) {
      if (statSync(path).isDirectory()) sets.push(loadTaskDir(path, arg, 'hook', options));
      else sets.push(...loadFile(path, arg, options));
    } else if (TASK_ID_PATTERN.test(arg)) {
      let ref: ReturnType<typeof findTaskRef>;
      try {
        ref = findTaskRef(arg, options.home);
      } catch (error) {
        throw inputError((error as Error).message, 'check the id with `atlas status`, or pass a bundle or hook.json instead', error);
      }
      sets.push(loadTaskDir(ref.dir, arg, 'task', options));
    } else {
      throw inputError(`${arg}: no such file, and not a task id`, 'pass a hook.json, a task id or a bundle from `atlas receipts export`');
    }
  }
  return sets;
}
