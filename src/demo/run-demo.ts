// `atlas demo`: atlas end to end in a few seconds, in a folder of its own. A sample repository, a
// real task (an agent fixes a bug, the fix is committed, the tests validate it and are signed), a
// real crash (atlas SIGKILLed mid-step, its agent left running), `atlas recover` finishing the
// task, and `atlas verify` checking the receipts with the public key alone, then refusing a
// tampered copy. Every stage runs the real CLI as a child process and says what it proves.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { formatDuration } from '../domain/duration.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { RunProcessResult } from '../engine/processes.js';
import { ProcessGroups, runProcess, shellQuote } from '../engine/processes.js';
import { createSampleRepo, DEMO_GIT_IDENTITY, DEMO_TEMPLATE, DEMO_TEST_COMMAND } from './sample-repo.js';

export interface DemoOptions {
  /** The CLI to run: node and bin/atlas.cjs of this atlas. */
  atlas: { node: string; script: string };
  /** Folder for everything the demo makes (default: a new temp folder). */
  dir?: string;
  /** ATLAS_HOME for the demo (default: <dir>/atlas-home, so ~/.atlas is never touched). */
  home?: string;
  /** Printed as the demo goes. */
  say: (text: string) => void;
  /** Longest wait for one stage (default 60 s). */
  stageTimeoutMs?: number;
}

export interface DemoStage {
  name: string;
  command: string;
  exit_code: number;
  proves: string;
}

export interface DemoResult {
  dir: string;
  home: string;
  repo: string;
  task_id: string;
  stages: DemoStage[];
  ok: boolean;
}

const DESCRIPTION = 'add() subtracts instead of adding';
const MAX_LINES = 30;

/** A long output's beginning and end: the diagnosis and the outcome matter, not every line between. */
function excerpt(lines: string[]): string[] {
  if (lines.length <= MAX_LINES) return lines;
  const half = MAX_LINES / 2;
  return [...lines.slice(0, half), `… (${lines.length - MAX_LINES} more lines)`, ...lines.slice(-half)];
}

function prepareDir(dir: string | undefined): string {
  if (dir === undefined) return mkdtempSync(join(tmpdir(), 'atlas-demo-'));
  const path = resolve(dir);
  if (existsSync(path) && readdirSync(path).length > 0) {
    throw new AtlasError(`${path} is not empty: the demo makes a repository and files there`, {
      exitCode: EXIT.input,
      hint: 'pass an empty or new folder with --dir, or leave --dir out for a temporary one',
    });
  }
  mkdirSync(path, { recursive: true });
  return path;
}

/** The child environment: this demo's ATLAS_HOME and agent, none of the caller's ATLAS_* settings. */
function demoEnv(home: string, agent: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ATLAS_')) env[k] = v;
  return {
    ...env,
    ...DEMO_GIT_IDENTITY,
    // Commits must not wait for a signing key the user may have configured globally.
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'commit.gpgsign',
    GIT_CONFIG_VALUE_0: 'false',
    ATLAS_HOME: home,
    ATLAS_AI_AGENT: 'command',
    ATLAS_AI_COMMAND: `node ${shellQuote(agent)}`,
    NO_COLOR: '1',
  };
}

export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const dir = prepareDir(options.dir);
  const home = options.home !== undefined ? resolve(options.home) : join(dir, 'atlas-home');
  const timeoutMs = options.stageTimeoutMs ?? 60_000;
  const say = options.say;
  const stages: DemoStage[] = [];
  const groups = new ProcessGroups();

  say(`atlas demo in ${dir}`);
  say(`ATLAS_HOME=${home}${options.home === undefined ? ' (a fresh one: your ~/.atlas is not touched)' : ''}`);
  const sample = await createSampleRepo(dir);
  const env = demoEnv(home, sample.agent);
  const shown = (args: string[]) => `atlas ${args.map((a) => (/^[\w./:=@-]+$/.test(a) ? a : shellQuote(a))).join(' ')}`;

  const atlas = (args: string[]): Promise<RunProcessResult> =>
    runProcess({
      command: options.atlas.node,
      args: [options.atlas.script, ...args],
      cwd: sample.repo,
      env,
      capture: true,
      timeoutMs,
      groups,
    });

  const stage = (n: number, name: string, args: string[], result: RunProcessResult, proves: string, expected: number[] = [0]) => {
    const command = shown(args);
    stages.push({ name, command, exit_code: result.exitCode, proves });
    say('');
    say(`${n}/6 ${name}`);
    say(`  $ ${command}   → exit ${result.exitCode} (${formatDuration(result.durationMs)})`);
    const out = `${result.stdout.toString()}${result.stderr.toString()}`.trimEnd();
    if (out)
      say(
        excerpt(out.split('\n'))
          .map((l) => `    ${l}`)
          .join('\n'),
      );
    say(`  ✓ ${proves}`);
    if (!expected.includes(result.exitCode)) {
      throw new AtlasError(`demo stage "${name}" exited ${result.exitCode} (expected ${expected.join(' or ')})`, {
        exitCode: EXIT.failure,
        hint: `everything is kept in ${dir} to look at; ATLAS_HOME=${home} atlas status shows the task`,
      });
    }
  };

  say('');
  say(`0/6 a sample repository: ${sample.repo}`);
  say(
    `  calc.mjs has a bug (add() subtracts), test.mjs catches it; .atlas/templates/${DEMO_TEMPLATE}.yaml has an agent fix it, commit and validate;`,
  );
  say(`  .atlas/config.yaml commits the validation command (${DEMO_TEST_COMMAND}). The agent is a plain script: no account, no network.`);

  // 1. Start the task and kill atlas with SIGKILL while the agent works.
  const startArgs = ['start', DEMO_TEMPLATE, DESCRIPTION, '--no-interactive'];
  const running = atlas(startArgs);
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(sample.agentStarted)) {
    if (Date.now() > deadline) {
      groups.killAll();
      throw new AtlasError('the demo agent did not start in time', { exitCode: EXIT.failure, hint: `look at ${dir}` });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  groups.killAll(); // atlas's own process group: the agent, in a group of its own, keeps running
  const killed = await running;
  stage(
    1,
    'start a task, then SIGKILL atlas mid-step',
    startArgs,
    killed,
    'a crash at the worst moment: atlas died while the agent was working; the hook on disk says exactly where',
    [137],
  );

  const statusArgs = ['status'];
  stage(
    2,
    'status sees the crash',
    statusArgs,
    await atlas(statusArgs),
    'crash detection: the owner process is gone, so the task is marked crashed with the command that recovers it',
  );

  const recoverArgs = ['recover', '--yes'];
  stage(
    3,
    'recover',
    recoverArgs,
    await atlas(recoverArgs),
    'recovery: the agent atlas left running is stopped, the idempotent step runs again, and the task completes (fix, commit, validate with a signed receipt)',
  );

  const bundle = join(dir, 'receipts.json');
  const exportArgs = ['receipts', 'export', '--out', bundle];
  stage(4, 'export the receipts', exportArgs, await atlas(exportArgs), `a bundle CI can check: ${bundle}`);

  const xpub = readFileSync(join(home, 'keys', 'account.xpub'), 'utf8').trim();
  const taskId = (JSON.parse(readFileSync(bundle, 'utf8')) as { tasks: { task_id: string }[] }).tasks[0]!.task_id;
  const branch = `demo/${(JSON.parse(readFileSync(join(home, 'workspaces', readdirSync(join(home, 'workspaces'))[0]!, 'workspace.json'), 'utf8')) as { name: string }).name}`;
  const verifyArgs = ['verify', bundle, '--xpub', xpub, '--require-step', 'validate', '--require-pass', '--commit', branch];
  stage(
    5,
    'verify with the public key alone',
    verifyArgs,
    await atlas(verifyArgs),
    `every receipt is genuine (signed by this key at its task's own path), made on the commit of ${branch} with a clean tree, ` +
      `and ${DEMO_TEST_COMMAND} (the command .atlas/config.yaml commits) passed there`,
  );

  const forged = join(dir, 'receipts-tampered.json');
  const data = JSON.parse(readFileSync(bundle, 'utf8')) as { tasks: { receipts: { command: string }[] }[] };
  for (const r of data.tasks[0]!.receipts) r.command = 'true';
  writeFileSync(forged, `${JSON.stringify(data, null, 2)}\n`);
  const forgedArgs = ['verify', forged, '--xpub', xpub, '--require-step', 'validate', '--commit', branch];
  stage(
    6,
    'a tampered copy fails',
    forgedArgs,
    await atlas(forgedArgs),
    "changing one signed field (the command) breaks its signature, and the repository's policy is no longer met: exit 1",
    [1],
  );

  say('');
  say(`Done. Everything is in ${dir} (remove it with rm -rf ${shellQuote(dir)}). Look around:`);
  say(`  ATLAS_HOME=${shellQuote(home)} atlas hook status --task ${taskId}`);
  say(`  cat ${shellQuote(join(home, 'workspaces'))}/*/tasks/${taskId}/HOOK.md`);
  return { dir, home, repo: sample.repo, task_id: taskId, stages, ok: true };
}
