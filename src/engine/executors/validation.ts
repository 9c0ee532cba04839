// `validation` steps: every command runs (even after one fails) through the shell in the task's
// working tree, or with validation.tree: pristine in a pristine copy of it (../pristine/); the
// exact stdout and stderr bytes are kept under artifacts/<step>/ and handed to the validation
// recorder (signed receipts). The step passes when every command exits 0.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { formatDuration } from '../../domain/duration.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { ValidationStep } from '../../domain/template.js';
import type { ProcessExecutor } from '../../exec/types.js';
import { createCheckpoint } from '../../hook/checkpoint.js';
import { PRIVATE_DIR_MODE, writeFileAtomic } from '../../store/atomic-write.js';
import { resolveValidationCommands } from '../../templates/detect-validation.js';
import { commandExecutable } from '../command-executable.js';
import type { PristineTree } from '../pristine/pristine-tree.js';
import { preparePristineTree } from '../pristine/pristine-tree.js';
import type { ValidationRun } from '../validation-recorder.js';
import { describeExit, runStreamed } from './command.js';
import type { StepResult, StepRunContext } from './types.js';

export function artifactPaths(stepName: string, attempt: number, n: number) {
  const dir = join('artifacts', stepName);
  return { dir, stdout: join(dir, `${attempt}-${n}-stdout.log`), stderr: join(dir, `${attempt}-${n}-stderr.log`) };
}

export async function runValidationStep(ctx: StepRunContext<ValidationStep>): Promise<StepResult> {
  // Commands fixed when the task started (-c, ATLAS_*, config) win over today's config: a
  // recovery runs exactly what the task was started with.
  const { commands, source } = ctx.task.validation_commands?.length
    ? resolveValidationCommands(
        ctx.step.commands,
        ctx.task.validation_commands,
        ctx.task.worktree,
        'the task (validation.commands when it started)',
      )
    : resolveValidationCommands(ctx.step.commands, ctx.config.validation.commands, ctx.task.worktree);
  await ctx.enterValidating({ commands: commands.length, source });
  ctx.reporter.note(`validating with ${commands.length} command${commands.length === 1 ? '' : 's'} from ${source}`);
  const timeoutMs = ctx.step.timeout_ms ?? ctx.config.validation.timeout;
  let pristine: PristineTree | undefined;
  if (ctx.config.validation.tree === 'pristine') {
    ctx.progress.setWorkingOn('making a pristine tree', { now: true });
    try {
      pristine = await preparePristineTree({
        home: ctx.home,
        task: ctx.task,
        taskDir: ctx.taskDir,
        config: ctx.config,
        mode: ctx.executor.mode,
        runSetup: (command, dir, executor) => runSetup(ctx, command, dir, executor, timeoutMs),
      });
    } catch (error) {
      if (ctx.interrupts.signal) return { status: 'failed', error: 'interrupted while making the pristine tree' };
      if (error instanceof AtlasError)
        return {
          status: 'failed',
          error: error.message,
          ...(error.hint ? { hint: error.hint } : {}),
          permanent: error.exitCode === EXIT.input,
        };
      throw error;
    }
    ctx.reporter.note(`pristine tree ${pristine.dir}, dependencies: ${pristine.dependencies}`);
  }
  try {
    return await runCommands(ctx, commands, timeoutMs, pristine);
  } finally {
    await pristine?.close();
  }
}

/** One setup command in the pristine tree; a failure stops the step before any receipt. */
async function runSetup(
  ctx: StepRunContext<ValidationStep>,
  command: string,
  dir: string,
  executor: ProcessExecutor,
  timeoutMs: number,
): Promise<void> {
  ctx.progress.setWorkingOn(`setup: ${command}`, { now: true });
  ctx.reporter.note(`$ ${command} (validation.setup, pristine tree)`);
  const result = await runStreamed(ctx, command, { timeoutMs, executor, cwd: dir });
  if (result.exitCode !== 0) {
    throw new AtlasError(
      `validation.setup failed: ${describeExit(command, result, timeoutMs)}; no dependency folders were cached and no command was validated`,
      {
        exitCode: EXIT.failure,
        hint: 'run the setup by hand in a fresh clone to see why (in sandbox mode its hosts must be in execution.sandbox.allowed_domains)',
      },
    );
  }
}

async function runCommands(
  ctx: StepRunContext<ValidationStep>,
  commands: string[],
  timeoutMs: number,
  pristine: PristineTree | undefined,
): Promise<StepResult> {
  const cwd = pristine?.dir ?? ctx.task.worktree;
  const executor = pristine?.executor ?? ctx.executor;
  const failures: string[] = [];
  const artifacts: string[] = [];
  for (const [i, command] of commands.entries()) {
    const n = i + 1;
    ctx.progress.setWorkingOn(command, { now: true });
    ctx.reporter.note(`$ ${command}`);
    const startedAt = new Date();
    const result = await runStreamed(ctx, command, { timeoutMs, capture: true, executor, cwd });
    const completedAt = new Date();
    // A run cut short by Ctrl+C proves nothing: no artifacts, no receipt, no further commands.
    if (ctx.interrupts.signal) return { status: 'failed', error: `interrupted while validating with \`${command}\`` };

    const paths = artifactPaths(ctx.step.name, ctx.attempt, n);
    mkdirSync(join(ctx.taskDir, paths.dir), { recursive: true, mode: PRIVATE_DIR_MODE });
    writeFileAtomic(join(ctx.taskDir, paths.stdout), result.stdout);
    writeFileAtomic(join(ctx.taskDir, paths.stderr), result.stderr);
    artifacts.push(paths.stdout, paths.stderr);

    const run: ValidationRun = {
      executable: commandExecutable(command, { cwd, env: ctx.env }),
      // Steps run on this machine only (execution-mode.ts refuses anything else); a sandboxed
      // runner (issue 12) sets 'sandbox' here.
      executionMode: executor.mode,
      validationTree: pristine ? 'pristine' : 'worktree',
      dependencies: pristine?.dependencies ?? 'worktree',
      stepName: ctx.step.name,
      stepIndex: ctx.index,
      command,
      exitCode: result.exitCode,
      startedAt,
      completedAt,
      stdout: result.stdout,
      stderr: result.stderr,
      stdoutArtifact: paths.stdout,
      stderrArtifact: paths.stderr,
    };
    if (ctx.validationRecorder) {
      const receipt = await ctx.validationRecorder.record(ctx.manager, ctx.task, run);
      ctx.reporter.note(`receipt ${receipt.receipt_id} (exit ${receipt.exit_code})`);
    }
    const took = formatDuration(result.durationMs);
    if (result.exitCode === 0) {
      ctx.reporter.note(`✓ ${command} (${took})`);
    } else {
      failures.push(describeExit(command, result, timeoutMs));
      ctx.reporter.note(
        `✗ ${command} exited with ${result.exitCode} (${took}); output kept in ${join(ctx.taskDir, paths.stdout)}, ${join(ctx.taskDir, paths.stderr)}`,
      );
    }
  }
  if (failures.length > 0) {
    return {
      status: 'failed',
      error: `${failures.length} of ${commands.length} validation command${commands.length === 1 ? '' : 's'} failed: ${failures.join('; ')}`,
    };
  }
  const checkpoint = await createCheckpoint(ctx.manager, {
    description: `validation passed: ${commands.join(', ')}`,
    trigger: 'validation',
    artifacts,
  });
  ctx.reporter.note(`checkpoint ${checkpoint.checkpoint_id} (validation)`);
  return { status: 'ok', summary: `${commands.length} command${commands.length === 1 ? '' : 's'} passed`, details: { commands } };
}
