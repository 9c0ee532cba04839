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
