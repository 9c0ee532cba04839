// Figures for lifecycle hooks and the reading side of conversations (issue 9):
//  - what the lifecycle bus adds to each streamed message (builtin recorder only, no user hooks);
//  - what HOOK.md pays to show tokens per step and the last messages (it is rewritten often);
//  - `atlas usage` over many tasks' conversations.
// Usage: node bench/lifecycle.mjs [messages=5000] [tasks=200]
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importBundle } from './lib.mjs';

const messages = Number(process.argv[2] ?? 5000);
const tasks = Number(process.argv[3] ?? 200);
const work = mkdtempSync(join(tmpdir(), 'atlas-bench-lifecycle-'));
const src = new URL('../src/', import.meta.url).pathname;
const entry = join(work, 'entry.ts');
writeFileSync(
  entry,
  `export { createLifecycleBus } from ${JSON.stringify(join(src, 'lifecycle/bus.ts'))};\n` +
    `export { ProcessGroups } from ${JSON.stringify(join(src, 'engine/processes.ts'))};\n` +
    `export { conversationView } from ${JSON.stringify(join(src, 'conversation/hook-view.ts'))};\n` +
    `export { newHook } from ${JSON.stringify(join(src, 'domain/hook.ts'))};\n`,
);
const lib = await importBundle(
  join(work, 'lib.mjs'),
  {
    entryPoints: [entry],
  },
  { require: true },
);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p99 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)];
const line = (what, value, target, ok) =>
  console.log(`   ${what.padEnd(58)} ${value.padStart(12)}   target ${target}   ${ok ? 'ok' : 'MISSED'}`);
let missed = 0;
const check = (what, value, unit, target, ok) => {
  line(what, `${value.toFixed(3)} ${unit}`, target, ok);
  if (!ok) missed++;
};

// 1. Bus overhead per OnMessage (the builtin appends the message, like the recorder does).
const taskDir = join(work, 'task');
const convDir = join(taskDir, 'conversations', 'conv-000000000001');
mkdirSync(convDir, { recursive: true });
const { appendFileSync } = await import('node:fs');
const groups = new lib.ProcessGroups();
const bus = lib.createLifecycleBus({
  builtins: { on_message: async (e) => appendFileSync(join(convDir, 'messages.jsonl'), `${JSON.stringify(e.message)}\n`) },
  config: { on_cold_start: [], on_message: [], on_stream_finish: [], on_terminate: [], timeout: 60000 },
  groups,
});
const base = {
  task_id: 'task-20260101-000000',
  step_name: 'implement',
  conversation_id: 'conv-000000000001',
  workspace: work,
  task_dir: taskDir,
};
const times = [];
for (let i = 0; i < messages; i++) {
  const message = {
    key: `m${i}`,
    conversation_id: base.conversation_id,
    body: `assistant text ${i} `.repeat(8),
    role: 2,
    timestamp: 1768000000 + i,
    tokens: 0,
    tool_calls:
      i % 3
        ? []
        : [
            {
              id: `t${i}`,
              type: 'tool_use',
              name: 'Write',
              input: { file_path: `src/f${i}.ts`, content: 'x'.repeat(200) },
              output: 'ok',
              status: 'success',
              error: '',
            },
          ],
  };
  const t = process.hrtime.bigint();
  await bus.message({ ...base, point: 'on_message', message });
  times.push(Number(process.hrtime.bigint() - t) / 1e6);
}
console.log(`   ${messages} OnMessage emissions (builtin recorder + lifecycle.log line each)`);
check('median time per emission, recording included', median(times), 'ms', '≤ 0.2 ms', median(times) <= 0.2);
check('p99 time per emission', p99(times), 'ms', '≤ 2 ms', p99(times) <= 2);

// 2. HOOK.md's conversation view on a task with many conversations and a long transcript.
for (let c = 2; c <= 30; c++) {
  const id = `conv-${c.toString(16).padStart(12, '0')}`;
  mkdirSync(join(taskDir, 'conversations', id), { recursive: true });
}
const record = (id, step) => ({
  id,
  task_id: base.task_id,
  step_name: step,
  attempt: 1,
  agent: 'claude',
  model: 'm',
  session_id: 's',
  started_at: '2026-01-01T00:00:00Z',
  ended_at: null,
  status: 'completed',
  continues: null,
  stats: {
    messages_exchanged: 10,
    total_input_tokens: 1000,
    total_output_tokens: 100,
    total_cache_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    cost_usd: 0.01,
    partial: false,
    models: [],
  },
});
for (let c = 1; c <= 30; c++) {
  const id = `conv-${c.toString(16).padStart(12, '0')}`;
  writeFileSync(join(taskDir, 'conversations', id, 'conversation.json'), JSON.stringify(record(id, c === 1 ? 'implement' : `s${c}`)));
}
const hook = {
  ...lib.newHook(base.task_id, 'ws', '2026-01-01T00:00:00Z'),
  state: 'step_running',
  current_step: { step_name: 'implement', step_index: 0, started_at: '2026-01-01T00:00:00Z', attempt: 1, max_attempts: 3 },
};
const task = { id: base.task_id, steps: [{ name: 'implement', type: 'ai', prompt: 'x', max_attempts: 3, on_failure: 'fail' }] };
const viewTimes = [];
for (let i = 0; i < 50; i++) {
  const t = process.hrtime.bigint();
  lib.conversationView(taskDir, hook, task);
  viewTimes.push(Number(process.hrtime.bigint() - t) / 1e6);
}
console.log(`   HOOK.md view: 30 conversations, last messages of a ${messages}-message transcript`);
check('median time to gather tokens per step and last messages', median(viewTimes), 'ms', '≤ 5 ms', median(viewTimes) <= 5);

// 3. `atlas usage` over many tasks.
const home = join(work, 'home');
for (let t = 0; t < tasks; t++) {
  const id = `task-20260101-${String(t).padStart(6, '0')}`;
  const dir = join(home, 'workspaces', `ws${t}`, 'tasks', id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'task.json'), JSON.stringify({ id, template: 'bugfix', steps: [] }));
  for (let c = 0; c < 5; c++) {
    const cid = `conv-${(t * 5 + c).toString(16).padStart(12, '0')}`;
    mkdirSync(join(dir, 'conversations', cid), { recursive: true });
    writeFileSync(join(dir, 'conversations', cid, 'conversation.json'), JSON.stringify({ ...record(cid, 'implement'), task_id: id }));
  }
}
const cli = join(import.meta.dirname, '..', 'bin', 'atlas.cjs');
const usageTimes = [];
for (let i = 0; i < 5; i++) {
  const t = Date.now();
  const r = spawnSync(process.execPath, [cli, 'usage', '--by', 'step'], { env: { ...process.env, ATLAS_HOME: home }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  usageTimes.push(Date.now() - t);
}
console.log(`   atlas usage over ${tasks} tasks × 5 conversations (whole command, node start included)`);
check('median wall time', median(usageTimes), 'ms', '≤ 500 ms', median(usageTimes) <= 500);

groups.terminateAll();
rmSync(work, { recursive: true, force: true });
process.exit(missed > 0 ? 1 : 0);
