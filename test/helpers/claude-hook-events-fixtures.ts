import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runHookOnce } from '../../src/integrations/claude/entry.js';
import { fixtureEvent } from './claude-hook-fixtures.js';
import { git } from './engine-fixtures.js';

export const SESSION = 'ff0ab16e-c1b9-48cc-9bed-0e8104c75dea';
export const PROMPT = '216b5d0e-f121-4252-aa4b-79a445695ecb';

export function setup() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'atlas-claude-events-')));
  const repo = join(base, 'repo');
  const home = join(base, 'home');
  const config = join(base, 'claude-config');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, '-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-q', '--allow-empty', '-m', 'init');
  // The transcript the payloads point at, as Claude Code writes it.
  const projects = join(config, 'projects', '-tmp-atlas-fixture-repo');
  mkdirSync(join(projects, SESSION, 'subagents'), { recursive: true });
  // One line per content block: m1 thinks aloud and calls a tool, m2 is the turn's last message.
  const assistant = (id: string, out: number, block: Record<string, unknown>) =>
    JSON.stringify({
      type: 'assistant',
      promptId: PROMPT,
      message: {
        id,
        model: 'claude-opus-4-8',
        content: [block],
        usage: { input_tokens: 10, output_tokens: out, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
      },
    });
  const transcript = join(projects, `${SESSION}.jsonl`);
  const lastMessage = assistant('m2', 5, { type: 'text', text: 'All done here.' });
  writeFileSync(
    transcript,
    [
      JSON.stringify({ type: 'user', promptId: 'older' }),
      JSON.stringify({ type: 'user', promptId: PROMPT, message: { content: 'please write the notes' } }),
      assistant('m1', 5, { type: 'text', text: 'Writing the notes.' }),
      assistant('m1', 5, { type: 'tool_use', id: 'toolu_1', name: 'Write', input: {} }),
      lastMessage,
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(projects, SESSION, 'subagents', 'agent-a4fa1e1ad0842b7ee.jsonl'),
    `${assistant('m3', 5, { type: 'text', text: 'sub found things' })}\n`,
  );
  const env: NodeJS.ProcessEnv = { ...process.env, ATLAS_HOME: home };
  delete env['ATLAS_CLAUDE_LAUNCHED'];
  delete env['ATLAS_CONVERSATION_ID'];
  const out: string[] = [];
  const err: string[] = [];
  const send = async (name: string, change: Record<string, unknown> = {}, extraEnv: NodeJS.ProcessEnv = {}) => {
    out.length = 0;
    err.length = 0;
    const code = await runHookOnce({
      input: fixtureEvent(name, repo, { session_id: SESSION, ...change }, config),
      env: { ...env, ...extraEnv },
      cwd: repo,
      stdout: (t) => out.push(t),
      stderr: (t) => err.push(t),
    });
    return { code, stdout: out.join(''), stderr: err.join('') };
  };
  return { base, repo, home, config, env, send, transcript, lastMessage };
}

export const SEQUENCE = [
  'session-start-startup',
  'user-prompt-submit',
  'pre-tool-use-write',
  'post-tool-use-write',
  'pre-tool-use-edit',
  'post-tool-use-edit',
  'pre-tool-use-read',
  'post-tool-use-failure-read',
  'pre-tool-use-bash',
  'post-tool-use-bash',
  'pre-tool-use-agent',
  'subagent-start',
  'subagent-stop',
  'post-tool-use-agent',
  'stop',
  'session-end',
];
