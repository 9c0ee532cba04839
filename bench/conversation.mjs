// Recording cost per streamed event: a 5,000-event Claude Code stream-json file (generated here:
// assistant text and tool calls, tool results, one result) replayed line by line through the real
// parser and the conversation recorder (messages.jsonl appends, conversation.json rewrites on each
// new API call), as an ai step records a live run. Target: ≤ 1 ms per event at the median.
// Usage: node bench/conversation.mjs [events=5000]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importBundle } from './lib.mjs';

const target = Number(process.argv[2] ?? 5000);
const work = mkdtempSync(join(tmpdir(), 'atlas-bench-conversation-'));
const src = new URL('../src/', import.meta.url).pathname;
const entry = join(work, 'entry.ts');
writeFileSync(
  entry,
  `export { ClaudeStreamParser } from ${JSON.stringify(join(src, 'agent/claude-stream.ts'))};\n` +
    `export { AgentConversation } from ${JSON.stringify(join(src, 'conversation/agent-conversation.ts'))};\n` +
    `export { builtinLifecycleBus } from ${JSON.stringify(join(src, 'conversation/bus.ts'))};\n` +
    `export { readMessages } from ${JSON.stringify(join(src, 'conversation/read.ts'))};\n`,
);
const lib = await importBundle(
  join(work, 'lib.mjs'),
  {
    entryPoints: [entry],
  },
  { require: true },
);

// The stream: turns of text + 1-3 tool calls (one assistant event per block, as Claude Code prints
// them) + their results, then the result event.
const session = 'bench-session';
const lines = [
  JSON.stringify({ type: 'system', subtype: 'init', session_id: session, model: 'claude-bench', tools: ['Bash', 'Read', 'Edit'] }),
];
let expectedInput = 0;
let turn = 0;
while (lines.length < target - 1) {
  turn++;
  const id = `msg_${turn.toString(16).padStart(8, '0')}`;
  const usage = { input_tokens: 1000 + turn, output_tokens: 1, cache_read_input_tokens: 5000, cache_creation_input_tokens: 20 };
  expectedInput += usage.input_tokens;
  const assistant = (block) =>
    JSON.stringify({
      type: 'assistant',
      message: { id, type: 'message', role: 'assistant', model: 'claude-bench', content: [block], usage },
      session_id: session,
      uuid: `u-${lines.length}`,
    });
  lines.push(assistant({ type: 'text', text: `Turn ${turn}: looking at src/module${turn % 40}.ts and what calls it. `.repeat(3) }));
  const tools = 1 + (turn % 3);
  for (let t = 0; t < tools && lines.length < target - 1; t++) {
    lines.push(
      assistant({
        type: 'tool_use',
        id: `toolu_${turn}_${t}`,
        name: t === 0 ? 'Read' : 'Bash',
        input: t === 0 ? { file_path: `/repo/src/module${turn % 40}.ts` } : { command: `npm test -- module${turn % 40}` },
      }),
    );
  }
  for (let t = 0; t < tools && lines.length < target - 1; t++) {
    lines.push(
      JSON.stringify({
        type: 'user',
        message: {
          role: 'user',
          content: [
            { tool_use_id: `toolu_${turn}_${t}`, type: 'tool_result', content: `line of output ${t}\n`.repeat(40), is_error: t === 2 },
          ],
        },
        session_id: session,
        uuid: `r-${lines.length}`,
      }),
    );
  }
}
lines.push(
  JSON.stringify({
    type: 'result',
    subtype: 'success',
    is_error: false,
    result: 'done',
    session_id: session,
    total_cost_usd: 1.23,
    usage: {
      input_tokens: expectedInput,
      output_tokens: 777,
      cache_read_input_tokens: 5000 * turn,
      cache_creation_input_tokens: 20 * turn,
    },
    modelUsage: {},
    permission_denials: [],
  }),
);
const streamFile = join(work, 'stream.jsonl');
writeFileSync(streamFile, `${lines.join('\n')}\n`);

const stream = readFileSync(streamFile, 'utf8')
  .split('\n')
  .filter((l) => l.length > 0);
const taskDir = join(work, 'task');
const conversation = new lib.AgentConversation({
  lifecycle: lib.builtinLifecycleBus(),
  taskDir,
  taskId: 'task-bench',
  stepName: 'implement',
  attempt: 1,
  agent: 'claude',
  model: '',
  workspace: '/repo',
  prompt: 'bench',
});
const parser = new lib.ClaudeStreamParser('/repo');
const times = new Float64Array(stream.length);
const started = process.hrtime.bigint();
for (let i = 0; i < stream.length; i++) {
  const t0 = process.hrtime.bigint();
  for (const u of parser.push(`${stream[i]}\n`)) conversation.update(u);
  times[i] = Number(process.hrtime.bigint() - t0) / 1e6;
}
const record = await conversation.end({ ok: true, interrupted: false });
const totalMs = Number(process.hrtime.bigint() - started) / 1e6;
const sorted = [...times].sort((a, b) => a - b);
const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
const median = q(0.5);
const messages = lib.readMessages(join(taskDir, 'conversations', record.id, 'messages.jsonl'));

console.log(
  `   ${stream.length} events (${turn} API calls), ${messages.length} messages written, ${(Buffer.byteLength(lines.join('\n')) / 1e6).toFixed(1)} MB of stream-json`,
);
console.log(
  `   per event: median ${median.toFixed(3)} ms, p95 ${q(0.95).toFixed(3)} ms, p99 ${q(0.99).toFixed(3)} ms, max ${sorted.at(-1).toFixed(2)} ms; total ${totalMs.toFixed(0)} ms`,
);
console.log(`   target: median ≤ 1 ms per event: ${median <= 1 ? 'met' : 'NOT MET'}`);
const ledgerOk = record.stats.total_input_tokens === expectedInput && record.stats.partial === false;
console.log(`   ledger equals the result's totals: ${ledgerOk ? 'yes' : 'NO'}`);
rmSync(work, { recursive: true, force: true });
process.exit(median <= 1 && ledgerOk ? 0 : 1);
