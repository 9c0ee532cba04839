import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { atlas, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

describe('execution mode', () => {
  it('a configured sandbox is refused before anything runs, never silently run locally', async () => {
    const home = tempDir('atlas-home-');
    const repo = makeGitRepo({ 'package.json': JSON.stringify({ scripts: { test: 'node -e "require(\'fs\').writeFileSync(\'ran.txt\', \'x\')"' } }) });
    const result = await atlas(['start', 'check', 'validate', '-c', 'execution.mode=sandbox'], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('execution.mode is "sandbox", but this atlas can only run steps locally; nothing was run');
    expect(result.stderr).toContain('hint: set execution.mode: local');
    expect(readdirSync(repo)).not.toContain('ran.txt');
    expect(readdirSync(join(home, 'workspaces'))).toEqual([]);
  });
});
