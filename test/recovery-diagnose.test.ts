// Diagnosis: the hook moves to recovering with a filled RecoveryContext and this process owns the
// task; never for terminal or awaiting_human hooks or a live owner.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AtlasError } from '../src/domain/errors.js';
import { transition } from '../src/domain/hook.js';
import { readOwner } from '../src/liveness/owner.js';
import { diagnoseTask } from '../src/recovery/diagnose.js';
import { withLock } from '../src/store/lock.js';
import { taskFiles } from '../src/store/paths.js';
import type { TaskFixture } from './helpers/recovery-fixtures.js';
import {
  checkpoint,
  cleanupRecoveryFixtures,
  commitAll,
  completeSteps,
  deadPid,
  git,
  iso,
  killAndWait,
  makeRepo,
  makeTask,
  ownerRecord,
  runStep,
  setHook,
  spawnOwner,
  steps,
  tempHome,
  writeOwnerFile,
} from './helpers/recovery-fixtures.js';

let home: string;
let repo: string;
const heartbeat = { heartbeatIntervalMs: 60_000, staleThresholdMs: 300_000 };

beforeEach(() => {
  home = tempHome();
  repo = makeRepo();
});
afterEach(() => cleanupRecoveryFixtures());

async function implementing(f?: TaskFixture): Promise<TaskFixture> {
  const t = f ?? (await makeTask({ home, repo }));
  const at = iso(10 * 60_000);
  await setHook(t, (h) =>
    runStep(completeSteps(h, t.task, 1, at), t.task, 1, at, {
      working_on: 'Adding nil checks for config fields',
      files_touched: ['src/app.ts'],
      last_output: "I've added the nil check for Server. Now adding for Database...",
    }),
  );
  return t;
}

async function expectAtlasError(p: Promise<unknown>, exitCode: number, text: RegExp): Promise<void> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AtlasError);
  expect((error as AtlasError).exitCode).toBe(exitCode);
  expect((error as AtlasError).message).toMatch(text);
}

describe('diagnoseTask', () => {
  it('after a SIGKILL: recovering, crash_detected with the old owner, a filled context, HOOK.md, and this process owns the task', async () => {
    const f = await implementing();
    const head = git(repo, 'rev-parse', 'HEAD');
    const ckpt = checkpoint({ step_index: 1, created_at: iso(5 * 60_000), git_commit: head });
    await setHook(f, (h) => ({ ...h, checkpoints: [ckpt] }));
    const child = await spawnOwner(f.ref);
    await killAndWait(child);

    const d = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat });
    try {
      expect(d.kind).toBe('crash');
      expect(d.fresh).toBe(true);
      expect(d.previousOwner?.pid).toBe(child.pid);
      const hook = f.manager.read();
      expect(hook.state).toBe('recovering');
      expect(hook.recovery).toEqual(d.recovery);
      expect(d.recovery).toMatchObject({
        crash_type: 'signal',
        last_known_state: 'step_running',
        was_validating: false,
        partial_output: "I've added the nil check for Server. Now adding for Database...",
        recommended_action: 'retry_from_checkpoint',
        last_checkpoint_id: ckpt.checkpoint_id,
      });
      const event = hook.history[hook.history.length - 1]!;
      expect(event).toMatchObject({
        from_state: 'step_running',
        to_state: 'recovering',
        trigger: 'crash_detected',
        step_name: 'implement',
      });
      expect(event.details).toMatchObject({
        crash_type: 'signal',
        liveness: `process ${child.pid} is no longer running`,
        previous_owner: { pid: child.pid },
        recommended_action: 'retry_from_checkpoint',
      });
      // owner.json of the dead process was replaced by this one's.
      expect(readOwner(taskFiles(f.ref.dir).owner)?.pid).toBe(process.pid);
      const md = readFileSync(taskFiles(f.ref.dir).hookMarkdown, 'utf8');
      expect(md).toContain(`A crash was detected at ${d.recovery.detected_at} (signal: process ${child.pid} is no longer running)`);
      expect(md).toContain('Recommended action: **retry_from_checkpoint**');
      expect(md).toContain(`atlas recover --task ${f.ref.id} --yes`);
      expect(md).toContain('**For an AI session:**');
      expect(md).toContain(ckpt.checkpoint_id);
    } finally {
      d.ownership.release();
    }
    expect(readOwner(taskFiles(f.ref.dir).owner)).toBeUndefined();
  });

  it('is idempotent: a hook already in recovering keeps its diagnosis', async () => {
    const f = await implementing();
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    const first = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat });
    first.ownership.release();
    const second = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat });
    second.ownership.release();
    expect(second.fresh).toBe(false);
    expect(second.recovery).toEqual(first.recovery);
    const triggers = f.manager.read().history.map((e) => e.trigger);
    expect(triggers.filter((t) => t === 'crash_detected')).toHaveLength(1);
    expect(triggers[triggers.length - 1]).toBe('recovery_resumed');
    expect(f.manager.read().state).toBe('recovering');
  });

  it('never touches a task whose owner is alive', async () => {
    const f = await implementing();
    const child = await spawnOwner(f.ref);
    const before = readFileSync(taskFiles(f.ref.dir).hook, 'utf8');
    await expectAtlasError(diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat }), 1, new RegExp(`running in process ${child.pid}`));
    expect(readFileSync(taskFiles(f.ref.dir).hook, 'utf8')).toBe(before);
    expect(readOwner(taskFiles(f.ref.dir).owner)?.pid).toBe(child.pid);
  });

  it('re-checks under the hook lock: an owner that appears while it waits is not taken over', async () => {
    const f = await implementing();
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    let diagnosis: Promise<unknown> | undefined;
    await withLock(taskFiles(f.ref.dir).hook, async () => {
      diagnosis = diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat }).catch((e: unknown) => e);
      // While diagnosis waits for the lock, a live owner takes the task back (and beats).
      await new Promise((r) => setTimeout(r, 300));
      await spawnOwner(f.ref);
    });
    const error = await diagnosis;
    expect(error).toBeInstanceOf(AtlasError);
    expect((error as Error).message).toMatch(/is running in process/);
    expect(f.manager.read().state).toBe('step_running');
  });

  it('refuses a stale owner that still runs on this host (stopped or hung), naming the pid to kill', async () => {
    const f = await implementing();
    writeOwnerFile(f.ref, ownerRecord({ heartbeat_at: iso(600_000), stale_threshold_ms: 60_000 }));
    const error = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/still exists but has not beaten/);
    expect((error as AtlasError).hint).toContain(`kill ${process.pid}`);
    expect(f.manager.read().state).toBe('step_running');
  });

  it('a stale heartbeat from another host → timeout', async () => {
    const f = await implementing();
    writeOwnerFile(f.ref, ownerRecord({ host: 'elsewhere.example', heartbeat_at: iso(600_000) }));
    const d = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat });
    d.ownership.release();
    expect(d.recovery.crash_type).toBe('timeout');
    expect(d.livenessReason).toContain('no heartbeat from elsewhere.example');
  });

  it('never for terminal hooks', async () => {
    const f = await makeTask({ home, repo });
    await setHook(f, (h) =>
      transition(completeSteps(h, f.task, 4, iso(600_000)), { to: 'completed', trigger: 'task_complete', at: iso(600_000) }),
    );
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    await expectAtlasError(diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat }), 4, /is completed: there is nothing to recover/);
    expect(f.manager.read().state).toBe('completed');
  });

  it('an awaiting_human hook is not moved to recovering: it is diagnosed for display only', async () => {
    const f = await implementing();
    await setHook(f, (h) =>
      transition(h, { to: 'awaiting_human', trigger: 'interrupted', at: iso(60_000), details: { reason: 'SIGINT' } }),
    );
    const before = f.manager.read();
    const d = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat });
    d.ownership.release();
    expect(d.kind).toBe('paused');
    expect(d.pausedBy).toBe('interrupted');
    expect(d.recovery).toMatchObject({ last_known_state: 'step_running', recommended_action: 'manual' });
    const after = f.manager.read();
    expect(after.state).toBe('awaiting_human');
    expect(after.history).toEqual(before.history);
    expect(after.recovery).toBeUndefined();
  });

  it('a git commit step cut off after its commit → skip_step with the commit as evidence', async () => {
    const f = await makeTask({ home, repo, steps: [steps.implement(), steps.commit()] });
    const startedAt = iso(60_000);
    await setHook(f, (h) => runStep(completeSteps(h, f.task, 1, iso(120_000)), f.task, 1, startedAt));
    writeFileSync(join(repo, 'src', 'app.ts'), 'export const a = 3;\n');
    const sha = commitAll(repo, 'fix: the null pointer');
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    const d = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat });
    d.ownership.release();
    expect(d.recovery.recommended_action).toBe('skip_step');
    expect(d.recovery.reason).toContain(`commit ${sha.slice(0, 12)}`);
    expect(d.recovery.reason).toContain('finishes the task');
  });

  it('a git commit step cut off before committing → manual', async () => {
    const f = await makeTask({ home, repo, steps: [steps.implement(), steps.commit()] });
    await setHook(f, (h) => runStep(completeSteps(h, f.task, 1, iso(120_000)), f.task, 1, iso(60_000)));
    writeFileSync(join(repo, 'src', 'app.ts'), 'export const a = 3;\n');
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    const d = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat });
    d.ownership.release();
    expect(d.recovery.recommended_action).toBe('manual');
  });

  it('a push step whose remote-tracking branch is at HEAD → skip_step', async () => {
    const remote = makeRepo();
    git(repo, 'remote', 'add', 'origin', remote);
    git(repo, 'push', '-q', 'origin', 'main:pushed');
    git(repo, 'fetch', '-q', 'origin');
    git(repo, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
    const f = await makeTask({ home, repo, steps: [steps.implement(), steps.push()] });
    await setHook(f, (h) => runStep(completeSteps(h, f.task, 1, iso(120_000)), f.task, 1, iso(60_000)));
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    const d = await diagnoseTask({ ref: f.ref, manager: f.manager, heartbeat });
    d.ownership.release();
    expect(d.recovery.recommended_action).toBe('skip_step');
    expect(d.recovery.reason).toContain('origin/main is at');
  });
});
