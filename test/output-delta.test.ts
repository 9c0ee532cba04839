// What a board following hook.json from another process streams: the lines a step's output tail
// gained, and the tails that ended steps left in their step_complete events.
import { describe, expect, it } from 'vitest';
import { endedStepOutputs, outputAdded, outputLines } from '../src/domain/output-delta.js';

describe('output deltas', () => {
  it('finds what the tail gained, also when its start was cut, and when it was replaced', () => {
    expect(outputAdded('', 'a\n')).toEqual({ added: 'a\n', replaced: false });
    expect(outputAdded('a\nb', 'a\nb\nc')).toEqual({ added: '\nc', replaced: false });
    expect(outputAdded('abcdef', 'defgh')).toEqual({ added: 'gh', replaced: false });
    expect(outputAdded('old', 'new')).toEqual({ added: 'new', replaced: true });
    expect(outputLines('par', 'tial\nnext\r\n\nrest')).toEqual({ lines: ['partial', 'next'], pending: 'rest' });
  });

  it('takes the tails of ended steps from step_complete events only, in order', () => {
    const events = [
      { trigger: 'step_start', details: { step_index: 0, last_output: 'not this' } },
      { trigger: 'step_complete', details: { step_index: 0, last_output: 'one\n' } },
      { trigger: 'step_complete', details: { step_index: 1 } },
      { trigger: 'step_complete', details: { step_index: '2', last_output: 'bad index' } },
      { trigger: 'step_complete' },
      { trigger: 'step_complete', details: { step_index: 3, last_output: 'three' } },
    ];
    expect(endedStepOutputs(events)).toEqual([
      { step: 0, output: 'one\n' },
      { step: 3, output: 'three' },
    ]);
  });
});
