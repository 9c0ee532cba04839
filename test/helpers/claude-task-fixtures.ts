// For a test file that runs atlas tasks against the real Claude Code and the fake Messages API:
// builds the CLI first, and after each test closes the fake API and removes the sandbox.
import { afterEach, beforeAll } from 'vitest';
import type { Sandbox } from './engine-fixtures.js';
import { ensureBuilt } from './engine-fixtures.js';
import type { FakeAnthropic } from './fake-anthropic.js';

export interface ClaudeTaskFixture {
  sb: Sandbox | undefined;
  fake: FakeAnthropic | undefined;
}

export function claudeTaskFixture(): ClaudeTaskFixture {
  const fx: ClaudeTaskFixture = { sb: undefined, fake: undefined };
  beforeAll(() => ensureBuilt());
  afterEach(async () => {
    await fx.fake?.close();
    fx.fake = undefined;
    fx.sb?.cleanup();
    fx.sb = undefined;
  });
  return fx;
}

/** A template `t` of one ai step tried once. */
export const ONE_AI_STEP_TEMPLATE = `name: t
description: one ai step
steps:
  - name: implement
    type: ai
    max_attempts: 1
    prompt: "Do {{description}}"
`;

/** A bugfix without validation commands: analyze, implement, commit. */
export const COMMAND_FREE_BUGFIX = `name: bugfix
description: command-free bugfix for the hook tests
branch_prefix: fix/
steps:
  - name: analyze
    type: ai
    idempotent: true
    prompt: |
      You are working on this bug in the repository at {{worktree}} (branch {{branch}}): {{description}}
      Find its cause without changing files.
  - name: implement
    type: ai
    prompt: |
      Fix this bug in the repository at {{worktree}} (branch {{branch}}): {{description}}
  - name: commit
    type: git
    action: commit
    message: "fix: {{description}}"
`;
