// atlas doctor [--task ID]: execution mode, sandbox readiness (with a trial run) and the effective
// sandbox policy. Exit 0 when the configured mode can run here, 1 when it cannot.
import { EXIT } from '../../domain/errors.js';
import type { DoctorReport } from '../../exec/doctor.js';
import { runDoctor } from '../../exec/doctor.js';
import { installHint } from '../../exec/readiness.js';
import { resolveTask } from '../../hook/resolve-task.js';
import type { CliContext } from '../context.js';

function list(items: readonly string[]): string[] {
  return items.length ? items.map((i) => `    ${i}`) : ['    (none)'];
}

function render(r: DoctorReport): string {
  const s = r.sandbox;
  const lines = [`execution mode   ${r.mode}${r.ok ? '' : '  (CANNOT RUN HERE: see below)'}`, '', `sandbox (${s.platform})`];
  for (const t of s.tools) lines.push(`  ${t.name.padEnd(14)} ${t.path ?? `MISSING (package ${t.apt})`}`);
  for (const p of s.problems) lines.push(`  problem        ${p}`);
  for (const w of s.warnings) lines.push(`  warning        ${w}`);
  const missing = s.tools.filter((t) => !t.path);
  if (missing.length) lines.push(`  fix            ${installHint(missing, s.platform)}`);
  if (s.trial)
    lines.push(
      `  trial run      ${s.trial.ok ? `ok: \`true\` ran sandboxed in ${s.trial.ms} ms (start-up included)` : `FAILED after ${s.trial.ms} ms: ${s.trial.error}`}`,
    );
  else lines.push('  trial run      not tried (the sandbox is not ready)');
  lines.push(`  ready          ${s.ready && s.trial?.ok ? 'yes' : 'no'}`);
  const p = r.policy;
  lines.push('', `sandbox policy   for ${r.policy_for.task_id ?? 'a task started here'} (${r.policy_for.worktree})`);
  lines.push('  writable (everything else is read-only):', ...list(p.allow_write));
  lines.push('  unreadable:', ...list(p.deny_read));
  lines.push('  network (only these hosts):', ...list(p.allowed_domains));
  lines.push(`  TMPDIR           ${p.tmpdir}`);
  if (p.home) lines.push(`  HOME             ${p.home} (the task's own; ~/.gitconfig and ~/.npmrc copied without credentials)`);
  lines.push(
    `  environment      PATH, HOME, locale, terminal, TMPDIR, the agent's API${p.env?.length ? `, ${p.env.join(', ')}` : ''}; nothing else of yours`,
  );
  lines.push('  change it with execution.sandbox.allow_write, deny_read, allowed_domains and env (docs/execution-modes.md)');
  if (r.last_run) lines.push('', `last run         ${r.last_run.mode} (${r.last_run.recorded_at}, process ${r.last_run.pid})`);
  return lines.join('\n');
}

export default async function doctor(ctx: CliContext, opts: { task?: string }): Promise<number> {
  const resolved = resolveTask({ ...(opts.task ? { taskId: opts.task } : {}), cwd: ctx.cwd, home: ctx.home, includeEnded: true });
  const config = await ctx.config(resolved?.task.repo_root);
  const report = await runDoctor({
    home: ctx.home,
    config,
    cwd: ctx.cwd,
    ...(resolved
      ? {
          task: { id: resolved.task.id, worktree: resolved.task.worktree, workspace_id: resolved.task.workspace_id, dir: resolved.ref.dir },
        }
      : {}),
  });
  ctx.out.result(report, () => render(report));
  return report.ok ? EXIT.ok : EXIT.failure;
}
