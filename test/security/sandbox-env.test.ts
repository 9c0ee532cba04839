// The environment a sandboxed step sees: an allow-list (PATH, HOME, locale, terminal, TMPDIR, the
// agent's API, atlas's own variables) and the names execution.sandbox.env adds. Before, every
// variable but AWS_* reached the sandbox: a GITHUB_TOKEN or a database URL in the person's shell
// was readable by every step.
import { beforeAll, describe, expect, it } from 'vitest';
import { coerce, LEAF_BY_KEY } from '../../src/config/schema.js';
import { sandboxEnvironment, sandboxEnvNameProblem } from '../../src/domain/sandbox-env.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import { commandStep, prepareAttack, startSandboxed, writeTemplate } from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

const SECRETS = {
  GITHUB_TOKEN: 'ghp_secret-github-token',
  DATABASE_URL: 'postgres://u:secret-db-password@h/db',
  ATLAS_DATABASE_URL: 'postgres://u:secret-atlas-db@h/db',
  AWS_SECRET_ACCESS_KEY: 'secret-aws-key',
  NPM_TOKEN: 'secret-npm-token',
};
const KEPT = {
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  TERM: 'xterm-256color',
  ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/',
  ANTHROPIC_API_KEY: 'the-agent-needs-this',
  MY_TOOL_FLAG: 'named-in-config',
};

function envLines(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const m = /^\s*\|? ?ENV ([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

describe.skipIf(skipSandbox)('the sandbox environment', { timeout: 120_000 }, () => {
  it("a step sees the allow-list and what execution.sandbox.env names, never the person's tokens", async () => {
    const attack = prepareAttack();
    writeTemplate(attack, commandStep('look', 'env | sed "s/^/ENV /"'));
    const run = await startSandboxed({ ...attack, env: { ...attack.env, ...SECRETS, ...KEPT } }, [
      '-c',
      'execution.sandbox.env=["MY_TOOL_FLAG"]',
    ]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const seen = envLines(run.stdout);
    for (const [name, value] of Object.entries(SECRETS)) {
      expect(seen.has(name), name).toBe(false);
      expect(run.stdout).not.toContain(value);
    }
    for (const [name, value] of Object.entries(KEPT)) expect(seen.get(name), name).toBe(value);
    for (const name of ['PATH', 'HOME', 'TMPDIR', 'ATLAS_TASK_ID', 'ATLAS_STEP']) expect(seen.has(name), name).toBe(true);
  });

  it('a name that is not a variable, or a store credential, is refused with a warning and passes nothing', async () => {
    const attack = prepareAttack();
    writeTemplate(attack, commandStep('look', 'env | sed "s/^/ENV /"'));
    const run = await startSandboxed({ ...attack, env: { ...attack.env, ...SECRETS } }, [
      '-c',
      'execution.sandbox.env=["AWS_SECRET_ACCESS_KEY"]',
    ]);
    expect(run.stderr).toContain(
      "invalid execution.sandbox.env: AWS_SECRET_ACCESS_KEY is one of the store's credentials, which never enter the sandbox",
    );
    expect(envLines(run.stdout).has('AWS_SECRET_ACCESS_KEY')).toBe(false);
  });
});

describe('the allow-list', () => {
  it("passes names, prefixes and the named extras; drops atlas's own secrets and the store's credentials even when named", () => {
    const env = {
      PATH: '/bin',
      LC_CTYPE: 'C',
      ATLAS_STEP: 's',
      ATLAS_DATABASE_URL: 'x',
      ATLAS_SERVER_DATABASE: 'x',
      ATLAS_SYNC_TOKEN: 'x',
      CLAUDE_CONFIG_DIR: '/c',
      GITHUB_TOKEN: 'x',
      EXTRA: 'e',
      AWS_PROFILE: 'p',
      UNSET: undefined,
    };
    expect(sandboxEnvironment(env, ['EXTRA', 'AWS_PROFILE'])).toEqual({
      PATH: '/bin',
      LC_CTYPE: 'C',
      ATLAS_STEP: 's',
      CLAUDE_CONFIG_DIR: '/c',
      EXTRA: 'e',
    });
    expect(sandboxEnvironment(env)).not.toHaveProperty('EXTRA');
  });

  it('execution.sandbox.env takes variable names only', () => {
    const leaf = LEAF_BY_KEY.get('execution.sandbox.env')!;
    expect(coerce(leaf, ['CI', 'NODE_OPTIONS'])).toEqual({ ok: true, value: ['CI', 'NODE_OPTIONS'] });
    expect(coerce(leaf, 'CI')).toEqual({ ok: true, value: ['CI'] });
    expect(coerce(leaf, '["CI", "1BAD"]')).toMatchObject({
      ok: false,
      problem: expect.stringContaining('"1BAD" is not an environment variable name'),
    });
    expect(coerce(leaf, 'A=B')).toMatchObject({ ok: false });
    expect(sandboxEnvNameProblem('AWS_SESSION_TOKEN')).toContain("store's credentials");
    expect(sandboxEnvNameProblem('GOOD_NAME')).toBeUndefined();
  });
});
