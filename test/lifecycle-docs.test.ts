// The example template of docs/lifecycle-hooks.md is a template atlas accepts, with the commands
// the page says.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTemplateText } from '../src/templates/parse.js';
import { ROOT } from './helpers/engine-fixtures.js';

describe('docs/lifecycle-hooks.md', () => {
  it('has an example template that parses, one command or a list per point', async () => {
    const page = readFileSync(join(ROOT, 'docs', 'lifecycle-hooks.md'), 'utf8');
    const yaml = page
      .split('```yaml\n')
      .map((b) => b.split('```')[0]!)
      .find((b) => b.startsWith('name: feature-synced'))!;
    const template = await parseTemplateText(yaml, 'lifecycle-hooks.md', 'feature-synced');
    expect(template.lifecycle).toEqual({
      on_cold_start: ['npm ci --prefer-offline', './scripts/fetch-fixtures.sh'],
      on_message: ['./scripts/forward-message.sh'],
      on_stream_finish: [`jq -c '{task: .task_id, usage: .usage}' >> "$HOME/agent-usage.jsonl"`],
      on_terminate: ['./scripts/notify.sh "$ATLAS_TASK_ID finished"'],
    });
  });

  it('rejects a lifecycle section that is not a mapping, and commands that are not text', async () => {
    const base = 'steps:\n  - name: a\n    type: command\n    run: "true"\n';
    await expect(parseTemplateText(`${base}lifecycle: [echo]\n`, 't.yaml', 't')).rejects.toThrow(
      'field "lifecycle": expected a mapping of hook points to commands, got a list',
    );
    await expect(parseTemplateText(`${base}lifecycle:\n  on_message: [1]\n`, 't.yaml', 't')).rejects.toThrow(
      'lifecycle: field "on_message": command 1 is 1, not text',
    );
    const empty = await parseTemplateText(`${base}lifecycle:\n  on_message: []\n`, 't.yaml', 't');
    expect(empty.lifecycle).toEqual({});
  });
});
