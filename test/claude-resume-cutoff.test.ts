// atlas killed before Claude Code's first API call (issue 35): the session id atlas chose is in the
// hook before Claude Code starts, so the retry resumes that session (where the orphan may have
// finished work) instead of starting a new one. A stand-in `claude` on PATH logs its arguments:
// the first run prints nothing and waits (killed with atlas), the resumed one answers at once.
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeTaskFixture } from './helpers/claude-task-fixtures.js';
import { atlas, finished, onlyTask, sandbox, startAtlas, waitFor } from './helpers/engine-fixtures.js';

const TEMPLATE = 'name: fix\nsteps:\n  - name: implement\n    type: ai\n    max_attempts: 2\n    prompt: "Fix: {{description}}"\n';

const fx = claudeTaskFixture();

describe('atlas killed before Claude Code said its session', () => {
  it('the retry resumes the session atlas started', async () => {
    const sb = (fx.sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE }));
    const log = join(sb.base, 'claude-args.log');
    const stub = join(sb.bin, 'claude');
    writeFileSync(
      stub,
      [
        '#!/bin/sh',
        `printf '%s\\n' "$*" >> '${log}'`,
        'case " $* " in',
        '  *" --resume "*) echo \'{"type":"result","subtype":"success","is_error":false,"result":"resumed","session_id":"s","usage":{"input_tokens":1,"output_tokens":1}}\'; exit 0 ;;',
        'esac',
        'exec sleep 600',
      ].join('\n'),
    );
    chmodSync(stub, 0o755);
    const env = { ...sb.env, ANTHROPIC_API_KEY: 'sk-ant-test-stub' };
    const child = startAtlas(sb, ['start', 'fix', 'kill me', '--local'], { env });
    const done = finished(child);
    await waitFor(() => existsSync(log), 30_000, 'claude to start');
    const first = readFileSync(log, 'utf8');
    const sessionId = /--session-id (\S+)/.exec(first)?.[1];
    expect(sessionId).toBeDefined();
    child.kill('SIGKILL');
    await done;
    expect(onlyTask(sb).hook.current_step.agent_session_id).toBe(sessionId);
    const recovered = await atlas(sb, ['recover', '--action', 'retry_step'], { env });
    expect(recovered.code, recovered.stdout + recovered.stderr).toBe(0);
    const runs = readFileSync(log, 'utf8').trim().split('\n');
    expect(runs).toHaveLength(2);
    expect(runs[1]).toContain(`--resume ${sessionId}`);
  }, 90_000);
});
