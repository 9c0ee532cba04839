// `atlas status` with many ended tasks (issue 8): ended tasks beyond the few shown are counted from
// their task.json alone, so 1,000 of them must cost almost nothing more than 10. Each ended task
// has a 1,000-event hook.json, which status must not read. Target: 1,000 ≤ 1.2 × 10, in one run.
// Usage: node bench/status-ended.mjs [many=1000] [few=10]
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ATLAS, makeRepo, report, tempDir, timeCommands } from './lib.mjs';

const many = Number(process.argv[2] ?? 1000);
const few = Number(process.argv[3] ?? 10);
const TARGET = 1.2;
const repo = makeRepo();
const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function endedTasks(count) {
  const home = tempDir('atlas-bench-status-');
  const t0 = Date.UTC(2026, 0, 1, 12, 0, 0);
  const steps = [
    { name: 'analyze', type: 'ai', prompt: 'a', idempotent: true, max_attempts: 3, on_failure: 'fail' },
    { name: 'validate', type: 'validation', commands: ['true'], max_attempts: 1, on_failure: 'fail' },
  ];
  const history = [{ timestamp: iso(t0), from_state: '', to_state: 'initializing', trigger: 'task_start' }];
  for (let i = 1; i < 1000; i++) {
    history.push({
      timestamp: iso(t0 + i * 1000),
      from_state: 'step_running',
      to_state: 'step_running',
      trigger: 'heartbeat_checkpoint',
      step_name: 'analyze',
      details: { step_index: 0 },
    });
  }
  history.push({ timestamp: iso(t0 + 1_000_000), from_state: 'step_running', to_state: 'completed', trigger: 'task_complete' });
  for (let n = 0; n < count; n++) {
    const workspace = `ws-${n}`;
    const id = `task-20260101-${String(100000 + n).slice(-6)}`;
    const dir = join(home, 'workspaces', workspace, 'tasks', id);
    mkdirSync(join(dir, 'artifacts'), { recursive: true });
    const at = iso(t0 + n * 1000);
    writeFileSync(
      join(dir, 'task.json'),
      JSON.stringify(
        {
          schema_version: '1.0',
          id,
          workspace_id: workspace,
          template: 'check',
          description: `ended task ${n}`,
          created_at: at,
          updated_at: at,
          status: 'completed',
          repo_root: repo,
          worktree: repo,
          in_place: true,
          branch: 'main',
          steps,
          task_index: n,
        },
        null,
        2,
      ),
    );
    writeFileSync(
      join(dir, 'hook.json'),
      JSON.stringify({
        version: '1.0',
        schema_version: '1.0',
        task_id: id,
        workspace_id: workspace,
        created_at: at,
        updated_at: at,
        state: 'completed',
        history,
        checkpoints: [],
        receipts: [],
        task_index: n,
      }),
    );
  }
  return home;
}

const homeFew = endedTasks(few);
const homeMany = endedTasks(many);
const command = (label, home) => ({ label, argv: [process.execPath, ATLAS, 'status'], cwd: repo, env: { ATLAS_HOME: home } });
const rows = timeCommands([command(`status, ${few} ended tasks`, homeFew), command(`status, ${many} ended tasks`, homeMany)], 20);
report(rows);
const ratio = rows[1].median / rows[0].median;
console.log(`  ${many} vs ${few} ended tasks: ${ratio.toFixed(2)}× (target ≤ ${TARGET}×) ${ratio <= TARGET ? 'ok' : 'MISSED'}`);
for (const dir of [homeFew, homeMany, repo]) rmSync(dir, { recursive: true, force: true });
process.exit(ratio <= TARGET ? 0 : 1);
