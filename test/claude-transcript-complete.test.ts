// When does a transcript hold a turn's final assistant message (issue 22, defect 4)? Claude Code
// writes one line per content block and may still be writing when Stop fires.
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { transcriptHasFinalMessage, waitForFinalMessage } from '../src/integrations/claude/transcript-complete.js';
import { tempDir } from './helpers/core-fixtures.js';

const line = (id: string, block: Record<string, unknown>) =>
  JSON.stringify({ type: 'assistant', message: { id, content: [block], usage: { input_tokens: 1, output_tokens: 1 } } });
const text = (t: string) => ({ type: 'text', text: t });
const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: {} };

describe('transcriptHasFinalMessage', () => {
  it("is true once the last assistant message is the Stop payload's text, blocks joined by message id", () => {
    const t = [line('m1', toolUse), line('m2', { type: 'thinking', thinking: 'hm' }), line('m2', text('All  done\nhere.')), ''].join('\n');
    expect(transcriptHasFinalMessage(t, 'All done here.')).toBe(true);
    expect(transcriptHasFinalMessage(t, undefined)).toBe(true);
  });

  it('is false while the last message is a tool call, differs from the payload, or is missing', () => {
    expect(transcriptHasFinalMessage([line('m1', text('Let me look.')), line('m1', toolUse)].join('\n'), undefined)).toBe(false);
    expect(transcriptHasFinalMessage(line('m1', text('Working on it.')), 'All done here.')).toBe(false);
    expect(transcriptHasFinalMessage(JSON.stringify({ type: 'user', message: { content: 'hi' } }), 'x')).toBe(false);
    expect(transcriptHasFinalMessage('', 'x')).toBe(false);
  });

  it('skips a half-written last line and lines of other kinds', () => {
    const t = [line('m1', text('Done.')), JSON.stringify({ type: 'system', subtype: 'assistant-ish' }), '{"type":"assistant","mess'].join(
      '\n',
    );
    expect(transcriptHasFinalMessage(t, 'Done.')).toBe(true);
  });
});

describe('waitForFinalMessage', () => {
  it('resolves as soon as the message is appended', async () => {
    const path = join(tempDir(), 't.jsonl');
    writeFileSync(path, `${line('m1', toolUse)}\n`);
    setTimeout(() => appendFileSync(path, `${line('m2', text('Finished.'))}\n`), 100);
    await expect(waitForFinalMessage(path, 'Finished.', 5000, 10)).resolves.toBe(true);
  });

  it('gives up after its bound when the message never comes, and copes with no file', async () => {
    const dir = tempDir();
    const path = join(dir, 't.jsonl');
    writeFileSync(path, `${line('m1', toolUse)}\n`);
    await expect(waitForFinalMessage(path, 'Finished.', 100, 10)).resolves.toBe(false);
    await expect(waitForFinalMessage(join(dir, 'missing.jsonl'), undefined, 50, 10)).resolves.toBe(false);
  });
});
