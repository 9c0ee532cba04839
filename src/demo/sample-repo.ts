// The sample project of `atlas demo`: a tiny Node module with a bug and its test, a template that
// has an agent fix it, commit and validate, and the agent itself: a plain script (no account, no
// network) that hangs on its first run, so the demo can kill atlas mid-step, and fixes the bug on
// the next one.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runGit } from '../git/run-git.js';

/** Identity for the sample repository's commits (the user's own git config is not needed). */
export const DEMO_GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'atlas demo',
  GIT_AUTHOR_EMAIL: 'demo@atlas.invalid',
  GIT_COMMITTER_NAME: 'atlas demo',
  GIT_COMMITTER_EMAIL: 'demo@atlas.invalid',
};

export const DEMO_TEMPLATE = 'demo';
export const DEMO_TEST_COMMAND = 'node test.mjs';

const FILES: Record<string, string> = {
  'calc.mjs': 'export function add(a, b) {\n  return a - b;\n}\n',
  'test.mjs': [
    "import { add } from './calc.mjs';",
    '',
    'if (add(2, 3) !== 5) {',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the demo's test.mjs holds this template literal
    '  console.error(`add(2, 3) should be 5, got ${add(2, 3)}`);',
    '  process.exit(1);',
    '}',
    "console.log('1 test passed: add(2, 3) is 5');",
    '',
  ].join('\n'),
  // Committed policy: `atlas verify` requires a passing receipt of exactly this command.
  '.atlas/config.yaml': `validation:\n  commands: [${JSON.stringify(DEMO_TEST_COMMAND)}]\n`,
  [`.atlas/templates/${DEMO_TEMPLATE}.yaml`]: [
    `name: ${DEMO_TEMPLATE}`,
    'description: an agent fixes a bug, the fix is committed, the tests validate it',
    'branch_prefix: demo/',
    'steps:',
    '  - name: fix',
    '    type: ai',
    '    idempotent: true',
    '    prompt: "Fix this: {{description}}"',
    '  - name: commit',
    '    type: git',
    '    action: commit',
    '    message: "fix: {{description}}"',
    '  - name: validate',
    '    type: validation',
    '',
  ].join('\n'),
};

/** The agent: first run marks itself started and hangs (to be killed); later runs fix calc.mjs. */
const AGENT = [
  "import { existsSync, readFileSync, writeFileSync } from 'node:fs';",
  '',
  "const started = new URL('./agent-started', import.meta.url);",
  'if (!existsSync(started)) {',
  "  console.log('agent: reading calc.mjs and test.mjs ...');",
  '  writeFileSync(started, String(process.pid));',
  '  setInterval(() => {}, 1000); // works "forever": the demo kills atlas now',
  '} else {',
  "  const source = readFileSync('calc.mjs', 'utf8');",
  "  writeFileSync('calc.mjs', source.replace('a - b', 'a + b'));",
  "  console.log('agent: add() subtracted; it adds now (calc.mjs)');",
  '}',
  '',
].join('\n');

export interface SampleRepo {
  repo: string;
  agent: string;
  /** Written by the agent's first run: the moment to kill atlas. */
  agentStarted: string;
}

export async function createSampleRepo(dir: string): Promise<SampleRepo> {
  const repo = join(dir, 'sample-repo');
  for (const [path, text] of Object.entries(FILES)) {
    mkdirSync(join(repo, path, '..'), { recursive: true });
    writeFileSync(join(repo, path), text);
  }
  const agent = join(dir, 'agent.mjs');
  writeFileSync(agent, AGENT);
  const env = DEMO_GIT_IDENTITY;
  await runGit(repo, ['init', '-q', '-b', 'main'], { env });
  await runGit(repo, ['add', '-A'], { env });
  await runGit(repo, ['-c', 'commit.gpgsign=false', 'commit', '-q', '-m', 'calc: add() (with a bug) and its test'], { env });
  return { repo, agent, agentStarted: join(dir, 'agent-started') };
}
