// Crash soak with the REAL Claude Code (issue 22): bugfix and feature tasks whose ai steps run the
// Claude Code CLI of the dev dependency against a fake Messages API served here (slow answers,
// a Write tool call then a final answer per run). Each task gets one SIGKILL at a random moment,
// of atlas or of the Claude Code it launched, then `atlas recover --yes` until it completes.
// Checked: every task completes; `atlas recover` right after a kill of atlas never says there is
// nothing to recover; no Claude Code of a killed run is left; the ledger's input, output and cache
// tokens over every conversation equal what the fake API delivered (an answer sent whole that
// Claude Code never wrote down, because it was killed first, is counted apart as lost in flight).
//
// Usage: node bench/soak-claude.mjs [--kills N] [--seed S]   (npm run soak:claude: 50 kills)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ATLAS, git, importBundle, makeRepo, ROOT, seededRandom, tempDir } from './lib.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? Number(process.argv[i + 1]) : fallback;
};
const KILLS = arg('kills', 50);
const SEED = arg('seed', Date.now() % 1_000_000);
const random = seededRandom(SEED);

// The fake API of the tests, bundled (it is TypeScript).
const work = tempDir('atlas-soak-claude-');
const { startFakeAnthropic, claudeEnv } = await importBundle(join(work, 'fake.mjs'), {
  entryPoints: [join(ROOT, 'test', 'helpers', 'fake-anthropic.ts')],
});

/** Each Claude Code run: a Write of a file of its own, then a final answer; both answered slowly. */
const fake = await startFakeAnthropic((request, index) => {
  const last = request.body?.messages?.at(-1);
  const afterTool = Array.isArray(last?.content) && last.content.some((c) => c.type === 'tool_result');
  const delayMs = 150 + Math.floor(random() * 900);
  if (afterTool) return { text: 'Done.', delayMs, usage: { input_tokens: 300 + index, output_tokens: 20, cache_read_input_tokens: 40 } };
  return {
    text: 'Writing.',
    delayMs,
    toolUses: [{ name: 'Write', input: { file_path: `notes/run-${index}.md`, content: `run ${index}\n` } }],
    usage: { input_tokens: 200 + index, output_tokens: 30, cache_creation_input_tokens: 12 },
  };
});

const ai = (name, idempotent = true) =>
  `  - name: ${name}\n    type: ai\n    max_attempts: 12\n    idempotent: ${idempotent}\n    prompt: "${name}: {{description}}"\n`;
const TEMPLATES = {
  bugfix: `name: bugfix\nbranch_prefix: fix/\nsteps:\n${ai('analyze')}${ai('implement')}  - name: validate\n    type: validation\n  - name: commit\n    type: git\n    action: commit\n    message: "fix: {{description}}"\n`,
  feature: `name: feature\nbranch_prefix: feat/\nsteps:\n${ai('plan')}${ai('implement')}  - name: validate\n    type: validation\n  - name: commit\n    type: git\n    action: commit\n    message: "feat: {{description}}"\n`,
};
const repo = makeRepo();
mkdirSync(join(repo, '.atlas', 'templates'), { recursive: true });
for (const [name, text] of Object.entries(TEMPLATES)) writeFileSync(join(repo, '.atlas', 'templates', `${name}.yaml`), text);
writeFileSync(join(repo, '.atlas', 'config.yaml'), 'validation:\n  commands: ["node test.mjs"]\n');
writeFileSync(join(repo, 'test.mjs'), "console.log('1 test passed');\n");
git(repo, 'add', '-A');
git(repo, 'commit', '-q', '-m', 'soak project');
const home = join(work, 'home');
// The bundled helper cannot find node_modules/.bin from where it was bundled: the PATH is set here.
const env = { ...claudeEnv(fake), ATLAS_HOME: home, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` };

function run(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [ATLAS, ...args], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Running, not a zombie left for whoever adopted it to reap. */
function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

const taskDirs = () => {
  const out = [];
  const ws = join(home, 'workspaces');
  for (const w of existsSync(ws) ? readdirSync(ws) : [])
    for (const t of existsSync(join(ws, w, 'tasks')) ? readdirSync(join(ws, w, 'tasks')) : []) out.push(join(ws, w, 'tasks', t));
  return out;
};
const readJson = (path) => {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
};

const stats = {
  kills: { atlas: 0, claude: 0, none: 0 },
  beforeTask: 0,
  completed: 0,
  unrecovered: [],
  nothingToRecover: 0,
  orphans: 0,
  recoveries: 0,
};
const started = Date.now();
for (let n = 0; n < KILLS; n++) {
  const template = n % 2 === 0 ? 'bugfix' : 'feature';
  const before = new Set(taskDirs());
  const child = spawn(process.execPath, [ATLAS, 'start', template, `soak ${n}`, '--no-interactive', '--workspace', `soak-${n}`], {
    cwd: repo,
    env,
    stdio: 'ignore',
  });
  const exited = new Promise((r) => child.on('close', r));
  const killAt = 400 + random() * 5000;
  const killAtlas = random() < 0.6;
  const seen = new Set();
  let dir;
  let done = false;
  void exited.then(() => (done = true));
  const t0 = Date.now();
  // Watch the run's agents (owner.json names their process groups) until the kill.
  while (!done && Date.now() - t0 < killAt) {
    dir ??= taskDirs().find((d) => !before.has(d));
    for (const g of (dir && readJson(join(dir, 'owner.json'))?.process_groups) ?? []) seen.add(g.pid);
    await new Promise((r) => setTimeout(r, 50));
  }
  dir ??= taskDirs().find((d) => !before.has(d));
  const agents = [...((dir && readJson(join(dir, 'owner.json'))?.process_groups) ?? [])].map((g) => g.pid);
  if (done) stats.kills.none++;
  else if (killAtlas || agents.length === 0) {
    child.kill('SIGKILL');
    stats.kills.atlas++;
  } else {
    for (const pid of agents) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    stats.kills.claude++;
  }
  await exited;
  if (!dir) {
    stats.beforeTask++; // killed before atlas start wrote any task: nothing ran, nothing to recover
    continue;
  }
  const id = dir.split('/').pop();
  // Recover until it completes (a `manual` verdict is answered with retry_step: every step of
  // these templates is safe to run again).
  for (let attempt = 0; attempt < 8; attempt++) {
    const hook = readJson(join(dir, 'hook.json'));
    if (hook?.state === 'completed') break;
    stats.recoveries++;
    const yes = await run(['recover', '--task', id, '--yes']);
    if (attempt === 0 && /no crashed or interrupted task/.test(yes.out)) stats.nothingToRecover++;
    if (readJson(join(dir, 'hook.json'))?.state !== 'completed' && yes.code !== 0)
      await run(['recover', '--task', id, '--action', 'retry_step']);
  }
  if (readJson(join(dir, 'hook.json'))?.state === 'completed') stats.completed++;
  else {
    // Why, for whoever reads a failed run: the hook's last events and what each said.
    const hook = readJson(join(dir, 'hook.json'));
    const last = (hook?.history ?? [])
      .slice(-4)
      .map((e) => `${e.trigger}${e.step_name ? ` ${e.step_name}` : ''}${e.details ? ` ${JSON.stringify(e.details).slice(0, 300)}` : ''}`);
    stats.unrecovered.push(`${id}: ${hook?.state ?? 'no hook'}${last.length > 0 ? `\n      ${last.join('\n      ')}` : ''}`);
  }
  for (const pid of seen) if (alive(pid)) stats.orphans++;
  process.stdout.write(`\r  ${n + 1}/${KILLS} tasks`);
}
process.stdout.write('\n');

// The ledger over every conversation of every task against what the API delivered.
const ledger = { input: 0, output: 0, cache_read: 0, cache_creation: 0, rows: 0, partial: 0, unknownOutput: 0 };
for (const dir of taskDirs()) {
  const conv = join(dir, 'conversations');
  for (const c of existsSync(conv) ? readdirSync(conv) : []) {
    const s = readJson(join(conv, c, 'conversation.json'))?.stats;
    if (!s) continue;
    ledger.rows++;
    if (s.partial) ledger.partial++;
    if (s.total_output_tokens === null) ledger.unknownOutput++;
    ledger.input += s.total_input_tokens;
    ledger.output += s.total_output_tokens ?? 0;
    ledger.cache_read += s.cache_read_tokens;
    ledger.cache_creation += s.cache_creation_tokens;
  }
}
// What a client could see of each answer the API sent whole: Claude Code's transcript holds every
// figure of it; atlas's stream (messages.jsonl) its input and cache tokens only; an answer neither
// holds was lost in flight (Claude Code killed between receiving it and writing it down), and so is
// the output of one only the stream saw. Those are shown apart: no client can count them.
const corpus = (root, match) => {
  const texts = [];
  const walk = (dir) => {
    for (const e of existsSync(dir) ? readdirSync(dir, { withFileTypes: true }) : []) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (match(e.name)) texts.push(readFileSync(join(dir, e.name), 'utf8'));
    }
  };
  walk(root);
  return texts.join('\n');
};
const transcripts = corpus(join(env.CLAUDE_CONFIG_DIR, 'projects'), (n) => n.endsWith('.jsonl'));
const streamed = corpus(join(home, 'workspaces'), (n) => n === 'messages.jsonl');
const api = { input: 0, output: 0, cache_read: 0, cache_creation: 0 };
const lost = { answers: 0, outputs: 0, tokens: 0 };
for (const u of fake.delivered()) {
  const whole = transcripts.includes(u.id);
  if (!whole && !streamed.includes(u.id)) {
    lost.answers++;
    lost.tokens += u.input_tokens + u.output_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
    continue;
  }
  api.input += u.input_tokens;
  api.cache_read += u.cache_read_input_tokens ?? 0;
  api.cache_creation += u.cache_creation_input_tokens ?? 0;
  if (whole) api.output += u.output_tokens;
  else {
    lost.outputs++;
    lost.tokens += u.output_tokens;
  }
}
await fake.close();

const diff = Object.fromEntries(Object.keys(api).map((k) => [k, ledger[k] - api[k]]));
const ok =
  stats.unrecovered.length === 0 && stats.orphans === 0 && stats.nothingToRecover === 0 && Object.values(diff).every((d) => d === 0);
console.log(`  seed ${SEED}, ${KILLS} tasks in ${((Date.now() - started) / 1000).toFixed(0)} s`);
console.log(
  `  kills                 ${stats.kills.atlas} of atlas, ${stats.kills.claude} of Claude Code (${stats.kills.none} tasks ended before their kill; ${stats.beforeTask} killed before any task existed)`,
);
console.log(
  `  tasks completed       ${stats.completed}/${KILLS - stats.beforeTask} after ${stats.recoveries} recoveries   target: all  ${stats.unrecovered.length === 0 ? 'ok' : 'MISSED'}`,
);
for (const u of stats.unrecovered.slice(0, 10)) console.log(`    unrecovered: ${u}`);
console.log(
  `  "nothing to recover"  ${stats.nothingToRecover} right after a kill   target: 0  ${stats.nothingToRecover === 0 ? 'ok' : 'MISSED'}`,
);
console.log(`  orphaned agents       ${stats.orphans} left after recovery   target: 0  ${stats.orphans === 0 ? 'ok' : 'MISSED'}`);
console.log(
  `  lost in flight        ${lost.answers} answers and ${lost.outputs} answers' output tokens that Claude Code, killed, never wrote or showed: ${lost.tokens} tokens no client can count`,
);
console.log(
  `  ledger vs API         ${ledger.rows} rows (${ledger.partial} partial, ${ledger.unknownOutput} with unknown output); ` +
    `input ${ledger.input} vs ${api.input}, output ${ledger.output} vs ${api.output}, cache read ${ledger.cache_read} vs ${api.cache_read}, cache creation ${ledger.cache_creation} vs ${api.cache_creation}   target: 0 difference  ${Object.values(diff).every((d) => d === 0) ? 'ok' : `MISSED ${JSON.stringify(diff)}`}`,
);
process.exit(ok ? 0 : 1);
