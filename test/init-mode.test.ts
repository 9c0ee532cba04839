// atlas init's default execution mode, in this process: written only when config.yaml names none,
// the rest of the file kept byte for byte; a file that does not parse, or an execution section
// without a mode, is left for the person.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseYamlText } from '../src/config/yaml-lib.js';
import { writeDefaultMode } from '../src/engine/init-mode.js';
import { tempDir } from './helpers/core-fixtures.js';

function config(text: string): string {
  const path = join(tempDir('atlas-init-mode-'), 'config.yaml');
  writeFileSync(path, text);
  return path;
}

describe('writeDefaultMode', () => {
  it('appends the sandbox mode with why, keeping what was there', async () => {
    const path = config('# mine\nai:\n  agent: command');
    expect(await writeDefaultMode(path, 'sandbox')).toEqual({ action: 'set', mode: 'sandbox' });
    const text = readFileSync(path, 'utf8');
    expect(text.startsWith('# mine\nai:\n  agent: command\n')).toBe(true);
    expect(text).toContain('set mode: local to run them unsandboxed');
    const { data } = await parseYamlText(text);
    expect(data).toMatchObject({ ai: { agent: 'command' }, execution: { mode: 'sandbox' } });
  });

  it('writes local with its own reason', async () => {
    const path = config('');
    expect(await writeDefaultMode(path, 'local')).toEqual({ action: 'set', mode: 'local' });
    expect(readFileSync(path, 'utf8')).toContain('set mode: sandbox to isolate them');
  });

  it('keeps a mode already chosen, whatever it is', async () => {
    const path = config('execution:\n  mode: local\n');
    expect(await writeDefaultMode(path, 'sandbox')).toEqual({ action: 'kept', mode: 'local' });
    expect(readFileSync(path, 'utf8')).toBe('execution:\n  mode: local\n');
  });

  it('leaves an execution section without a mode, or a scalar one, to the person', async () => {
    for (const text of ['execution:\n  timeout: 5\n', 'execution: sandbox\n']) {
      const path = config(text);
      const choice = await writeDefaultMode(path, 'sandbox');
      expect(choice).toMatchObject({ action: 'manual' });
      expect(choice.action === 'manual' && choice.reason).toContain('execution section without a mode');
      expect(readFileSync(path, 'utf8')).toBe(text);
    }
  });

  it('leaves a file that does not parse, saying why', async () => {
    const path = config('ai: [unclosed\n');
    const choice = await writeDefaultMode(path, 'sandbox');
    expect(choice).toMatchObject({ action: 'manual' });
    expect(choice.action === 'manual' && choice.reason).toMatch(/does not parse/);
    expect(readFileSync(path, 'utf8')).toBe('ai: [unclosed\n');
  });
});
