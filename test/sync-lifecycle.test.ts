// Workspace sync as the task runner's built-in lifecycle hooks, through the built CLI with a
// command agent: OnColdStart restores the workspace from sync.store before the agent runs (and
// a failed restore stops the step before the agent runs); OnStreamFinish pushes a new version of
// the workspace and the task's folder after each agent run.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, onlyTask, sandbox, writeFiles } from './helpers/engine-fixtures.js';
import { readStoredVersion } from './helpers/sync-fixtures.js';

let sb: Sandbox;
beforeAll(() => ensureBuilt());
afterEach(() => sb?.cleanup());

const TEMPLATE = `name: synced
steps:
  - name: implement
    type: ai
    max_attempts: 1
    prompt: "Do: {{description}}"
`;

/** A command agent that copies the restored file (or says it is missing) into agent-made.txt. */
function agentArgs(base: string): string[] {
  const agent = join(base, 'agent.js');
  writeFileSync(
    agent,
    `const fs = require('node:fs'); fs.writeFileSync('agent-made.txt', fs.existsSync('from-store.txt') ? fs.readFileSync('from-store.txt', 'utf8') : 'missing'); console.log('done');\n`,
  );
  return ['--agent', 'command', '-c', `ai.command=node ${agent}`];
}

function storeVersion(store: string, tree: string, files: Record<string, string>, state: object): void {
  writeFiles(join(store, tree, '1700000000'), { ...files, '.sandbox-state': JSON.stringify(state) });
}

const md5 = async (text: string) => (await import('node:crypto')).createHash('md5').update(text).digest('hex');

describe('sync lifecycle builtins in a task run', () => {
  it('restores before the agent runs and pushes the workspace and task folder after it', async () => {
    sb = sandbox();
    writeFiles(sb.repo, { '.atlas/templates/synced.yaml': TEMPLATE });
    const store = join(sb.base, 'store');
    storeVersion(
      store,
      'synced-ws',
      { 'from-store.txt': 'restored\n' },
      {
        version: '1.0',
        last_synced_at: 1700000000,
        files: [{ path: 'from-store.txt', checksum: await md5('restored\n'), size: 9, modified_at: 1700000000 }],
      },
    );
    const result = await atlas(sb, [
      'start',
      'synced',
      'use the store',
      '--workspace',
      'synced-ws',
      ...agentArgs(sb.base),
      '-c',
      `sync.store=${store}`,
      '-c',
      'sync.init_from_store=true',
    ]);
    expect(result.stderr).not.toMatch(/error|failed/i);
    expect(result.code).toBe(0);
    const { task, id } = onlyTask(sb);
    expect(readFileSync(join(task.worktree, 'agent-made.txt'), 'utf8')).toBe('restored\n');
    const versions = readdirSync(join(store, 'synced-ws'))
      .filter((n) => /^\d+$/.test(n))
      .sort();
    expect(versions).toHaveLength(2);
    // The store's version was in the old layout (files under the version); the push after the run is a manifest with blobs.
    const latest = readStoredVersion(store, 'synced-ws', versions[1]!);
    expect(latest['agent-made.txt']).toBe('restored\n');
    expect(Object.keys(latest).some((p) => p.startsWith('.git'))).toBe(false);
    const taskVersions = readdirSync(join(store, 'synced-ws', '.tasks', id)).filter((n) => /^\d+$/.test(n));
    expect(taskVersions).toHaveLength(1);
    expect(readStoredVersion(store, `synced-ws/.tasks/${id}`, taskVersions[0]!)['hook.json']).toBeDefined();
    expect(readdirSync(join(store, '.tasks'))).toEqual([`${id}.synced-ws`]);
  });

  it('a restore that fails stops the step before the agent runs, naming OnColdStart', async () => {
    sb = sandbox();
    writeFiles(sb.repo, { '.atlas/templates/synced.yaml': TEMPLATE });
    const store = join(sb.base, 'store');
    storeVersion(
      store,
      'bad-ws',
      {},
      { version: '1.0', last_synced_at: 1, files: [{ path: '../escape.txt', checksum: await md5('x'), size: 1, modified_at: 1 }] },
    );
    const result = await atlas(sb, [
      'start',
      'synced',
      'use the store',
      '--workspace',
      'bad-ws',
      ...agentArgs(sb.base),
      '-c',
      `sync.store=${store}`,
      '-c',
      'sync.init_from_store=true',
    ]);
    expect(result.code).not.toBe(0);
    expect(`${result.stdout}${result.stderr}`).toMatch(
      /OnColdStart: restoring the workspace of task-\S+ .*refuses to write: "\.\.\/escape.txt"/,
    );
    const { task } = onlyTask(sb);
    expect(existsSync(join(task.worktree, 'agent-made.txt'))).toBe(false);
    expect(existsSync(join(sb.base, 'escape.txt'))).toBe(false);
    expect(existsSync(join(sb.home, 'workspaces', 'bad-ws', 'escape.txt'))).toBe(false);
  });
});
