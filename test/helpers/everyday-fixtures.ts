// Fixtures for everyday runs of the built-in templates: a repository with an npm test, and a
// command agent (ai.agent=command) that edits a file, or hangs once so the test can interrupt it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from './engine-fixtures.js';
import { sandbox } from './engine-fixtures.js';

/** A repository whose `npm test` passes, in a fresh sandbox. */
export function npmRepo(scripts: Record<string, string> = { test: 'node -e "console.log(\'tests pass\')"' }): Sandbox {
  return sandbox({ 'package.json': `${JSON.stringify({ name: 'fixture', version: '1.0.0', scripts }, null, 2)}\n` });
}

/**
 * A command agent: reads the prompt on stdin, appends a line to fix.txt in its cwd and answers.
 * With AGENT_HANG=<marker> it first writes the marker and hangs, once: a later run (after the
 * marker exists) answers, so a task interrupted there can be continued.
 */
export function installAgent(sb: Sandbox): string[] {
  const agent = join(sb.base, 'agent.js');
  writeFileSync(
    agent,
    `const fs = require('node:fs');
fs.readFileSync(0, 'utf8');
const hang = process.env.AGENT_HANG;
if (hang && !fs.existsSync(hang)) { fs.writeFileSync(hang, String(process.pid)); setInterval(() => {}, 1000); }
else { fs.appendFileSync('fix.txt', 'fixed\\n'); process.stdout.write('done: fixed it\\n'); }
`,
  );
  return ['-c', 'ai.agent=command', '-c', `ai.command=node ${agent}`];
}
