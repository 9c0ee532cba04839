// Attack family 6: what belongs to others. From a sandboxed task: the store folder (default and
// sync.store), other tasks' folders, the server's accounts, tokens and other conversations, and
// the store's S3 credentials in the environment. From a sandboxed turn of account bob: alice's.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { ProcessGroups } from '../../src/exec/process-groups.js';
import { runProcess } from '../../src/exec/run-process.js';
import { createSandboxExecutor } from '../../src/exec/sandbox/executor.js';
import { storeFolders } from '../../src/exec/sandbox/policy.js';
import { resetSandbox } from '../../src/exec/sandbox/runtime.js';
import { conversationFiles } from '../../src/server/conversations/conversation-store.js';
import { conversationPolicy } from '../../src/server/conversations/turn-executor.js';
import { tempDir } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import { commandStep, prepareAttack, startSandboxed, writeTemplate } from '../helpers/security-fixtures.js';

const SECRET = 'OTHERS-SECRET-7d1f';

/** Shell lines printing LEAKED <label> for each path whose content (or listing) reaches the step. */
function probes(paths: Record<string, string>): string {
  return Object.entries(paths)
    .map(
      ([label, path]) =>
        `if grep -rqs ${SECRET} "${path}" || [ -n "$(ls -A "${path}" 2>/dev/null)" ]; then echo "LEAKED ${label}"; else echo "HIDDEN ${label}"; fi`,
    )
    .join('\n');
}

function plant(path: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, SECRET);
}

beforeAll(() => ensureBuilt());
afterAll(() => resetSandbox());

describe('the store folders a sandbox hides', () => {
  it('the default one always; sync.store when it is a folder or a file:// URL, not an S3 URL', async () => {
    const home = tempDir('atlas-sec-home-');
    const { config } = await loadConfig({ home, env: {} });
    const withStore = (store: string) => ({ ...config, sync: { ...config.sync, store } });
    expect(storeFolders(config, home)).toEqual([join(home, 'store')]);
    expect(storeFolders(withStore('s3://bucket/prefix'), home)).toEqual([join(home, 'store')]);
    expect(storeFolders(withStore('file:///srv/atlas%20store'), home)).toEqual([join(home, 'store'), '/srv/atlas store']);
    expect(storeFolders(withStore('/srv/plain'), home)).toEqual([join(home, 'store'), '/srv/plain']);
  });
});

describe.skipIf(skipSandbox)('nothing of others is readable', { timeout: 120_000 }, () => {
  it("a task: the stores, other tasks, the server's accounts and tokens, the store credentials", async () => {
    const attack = prepareAttack();
    const store = tempDir('atlas-sec-store-');
    plant(join(attack.home, 'store', 'other-ws', '20260101T000000Z', 'file.txt'));
    plant(join(store, 'other-ws', '20260101T000000Z', 'file.txt'));
    plant(join(attack.home, 'workspaces', 'other-ws', 'tasks', 'task-1', 'hook.json'));
    plant(join(attack.home, 'server', 'accounts', 'alice', 'conversations', 'c1', 'conversation.json'));
    plant(join(attack.home, 'server', 'tokens.json'));
    const script = [
      probes({
        'default store': join(attack.home, 'store'),
        'sync.store': store,
        'other task': join(attack.home, 'workspaces', 'other-ws'),
        'all workspaces': join(attack.home, 'workspaces', 'other-ws', 'tasks'),
        accounts: join(attack.home, 'server', 'accounts'),
        tokens: join(attack.home, 'server', 'tokens.json'),
      }),
      `if env | grep -q ${SECRET}; then echo "LEAKED credentials"; else echo "HIDDEN credentials"; fi`,
    ].join('\n');
    writeTemplate(attack, commandStep('probe', script));
    const result = await startSandboxed({ ...attack, env: { ...attack.env, AWS_SECRET_ACCESS_KEY: SECRET, AWS_ACCESS_KEY_ID: SECRET } }, [
      '-c',
      `sync.store=${store}`,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toMatch(/\| LEAKED/);
    expect(result.stdout.match(/\| HIDDEN/g)).toHaveLength(7);
  });

  it("a turn of account bob reads nothing of alice's, nor the account list; its own workspace works", async () => {
    const home = tempDir('atlas-sec-home-');
    const alice = conversationFiles(home, 'alice', 'c-alice');
    const bob = conversationFiles(home, 'bob', 'c-bob');
    plant(join(alice.workspace, 'notes.txt'));
    plant(alice.record);
    mkdirSync(bob.workspace, { recursive: true });
    writeFileSync(bob.record, '{}');
    const { config } = await loadConfig({ home, env: {} });
    const policy = await conversationPolicy(home, config, 'bob', 'c-bob');
    const executor = createSandboxExecutor(policy, bob.dir);
    // The path down to bob's own workspace exists inside (its mount points); nothing beside it does.
    const accounts = `if ls -A "${join(home, 'server', 'accounts')}" | grep -qv '^bob$'; then echo "LEAKED account list"; else echo "HIDDEN account list"; fi`;
    const script = `${probes({ 'alice workspace': alice.workspace, 'alice conversation': alice.dir })}\n${accounts}\necho mine > own.txt && cat own.txt`;
    const result = await runProcess({
      command: script,
      shell: true,
      cwd: bob.workspace,
      capture: true,
      groups: new ProcessGroups(),
      executor,
    });
    await executor.close?.();
    const out = result.stdout.toString();
    expect(out).not.toContain('LEAKED');
    expect(out.match(/HIDDEN/g)).toHaveLength(3);
    expect(out).toContain('mine');
  });
});
