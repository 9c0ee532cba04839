// A real Claude Code stream (recorded from 2.1.197 against the fake API), temp task folders, and the
// recorder wired to the parser and reader as the ai step wires them (without the bus).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { ClaudeStreamParser } from '../../src/agent/claude-stream.js';
import { ClaudeEventReader } from '../../src/conversation/claude-events.js';
import { ConversationRecorder } from '../../src/conversation/recorder.js';

export const STREAM = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'claude-stream', 'tool-run.jsonl'), 'utf8');

/** A temp task folder per call, removed after each test of the file that calls this. */
export function useTaskDirs(): () => string {
  let dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    dirs = [];
  });
  return (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'atlas-conv-'));
    dirs.push(dir);
    return dir;
  };
}

export function recorder(dir: string, extra: Partial<ConstructorParameters<typeof ConversationRecorder>[0]> = {}) {
  return new ConversationRecorder({
    taskDir: dir,
    taskId: 'task-1',
    stepName: 'implement',
    attempt: 1,
    agent: 'claude',
    model: '',
    continues: null,
    ...extra,
  });
}

/** Parser → reader → recorder, as the ai step wires them (without the bus). */
export function replay(rec: ConversationRecorder, text: string): void {
  const parser = new ClaudeStreamParser('/tmp/repo');
  const reader = new ClaudeEventReader(rec.id, {
    message: (m) => rec.recordMessage(m),
    call: (id, usage, model) => {
      rec.setModel(model);
      rec.addCall(id, usage);
    },
    session: (id, model) => {
      rec.setSession(id);
      rec.setModel(model);
    },
    result: (figures, denials) => {
      if (figures) rec.setResult(figures);
      rec.addPermissionDenials(denials);
    },
  });
  for (const u of [...parser.push(text), ...parser.end()]) if (u.kind === 'event') reader.event(u.event);
  reader.end();
}
