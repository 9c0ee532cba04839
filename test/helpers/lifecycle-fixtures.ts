// Fixtures for lifecycle hook tests: a hook command that records the JSON it gets on stdin (and
// fails while a marker file exists, so a test can "fix" it), and lifecycle.log reading.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface HookRecorder {
  /** Shell command to put in a template or config; `label` tells runs apart in the record. */
  command(label: string): string;
  /** What each run received, in order. */
  runs(): { label: string; event: any; env: { point: string; task: string; cwd: string } }[];
  /** While it exists, runs exit 3 after printing to stderr. */
  failMarker: string;
}

export function hookRecorder(base: string): HookRecorder {
  const script = join(base, 'hook.js');
  const record = join(base, 'hook-runs.jsonl');
  const failMarker = join(base, 'hook-fails');
  writeFileSync(
    script,
    `const fs = require('node:fs');
const input = fs.readFileSync(0, 'utf8');
const event = JSON.parse(input);
fs.appendFileSync(${JSON.stringify(record)}, JSON.stringify({ label: process.argv[2], event, env: { point: process.env.ATLAS_HOOK_POINT, task: process.env.ATLAS_TASK_ID, cwd: process.cwd() } }) + '\\n');
if (fs.existsSync(${JSON.stringify(failMarker)})) {
  process.stderr.write('hook says: the store is unreachable\\n');
  process.exit(3);
}
`,
  );
  return {
    command: (label) => `node ${script} ${label}`,
    runs: () =>
      existsSync(record)
        ? readFileSync(record, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l))
        : [],
    failMarker,
  };
}

export function lifecycleLog(taskDir: string): any[] {
  const path = join(taskDir, 'lifecycle.log');
  return existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
}
