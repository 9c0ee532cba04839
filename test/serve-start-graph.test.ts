// `atlas serve` start-up is a target (2× `node -e 0`, docs/performance.md), and most of what it
// costs beyond Node itself is the ES modules it loads before it listens (about 0.15 ms each here).
// What a request or a turn needs loads once it listens: this checks, from the bundler's own import
// graph, that the modules before the `listening` line stay the server's core, without the task
// engine, what runs a turn, or the lifecycle buses.
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

/** Source files `entry` loads through static imports alone (what Node must load before it runs). */
async function staticGraph(entry: string): Promise<Set<string>> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    outdir: 'unused',
    external: ['@anthropic-ai/sandbox-runtime', 'better-sqlite3', 'pg'],
    logLevel: 'silent',
    define: { ATLAS_VERSION: '"test"' },
  });
  const inputs = result.metafile.inputs;
  const seen = new Set([entry]);
  const queue = [entry];
  while (queue.length > 0) {
    for (const i of inputs[queue.shift()!]?.imports ?? []) {
      if (i.kind !== 'import-statement' || i.external || seen.has(i.path)) continue;
      seen.add(i.path);
      queue.push(i.path);
    }
  }
  return new Set([...seen].filter((f) => f.startsWith('src/')));
}

describe('what atlas serve loads before it listens', () => {
  it('is the server core: no task engine, no turn machinery, no lifecycle buses', async () => {
    const graph = await staticGraph('src/cli/commands/serve.ts');
    for (const later of [
      'src/server/tasks/tasks.ts',
      'src/engine/task-list.ts',
      'src/server/api/routes.ts',
      'src/server/conversations/turn-run.ts',
      'src/server/conversations/agent-turn.ts',
      'src/server/conversations/conversation-sandbox.ts',
      'src/server/conversations/lifecycle-adapter.ts',
      'src/server/conversations/turn-executor.ts',
      'src/server/board/local-watch.ts',
      'src/server/http/metrics.ts',
      'src/lifecycle/bus.ts',
      'src/conversation/agent-conversation.ts',
    ])
      expect(graph.has(later), `${later} is loaded before the server listens`).toBe(false);
    // 73 files when this was written (131 before): a few more is growth, dozens is a regression.
    expect(graph.size).toBeLessThanOrEqual(85);
  }, 60_000);
});
