// Progress as plain lines, for pipes, CI logs and --json (on stderr): one line per event, output
// lines prefixed with "  | ", no control codes.
import type { Reporter, StepFinishedInfo, TaskOutcome } from '../../engine/contract.js';
import { stepHeader, stepResult } from './format.js';
import { LineBuffer } from './line-buffer.js';

export class PlainReporter implements Reporter {
  private total = 0;
  private readonly buffers = { stdout: new LineBuffer(), stderr: new LineBuffer() };

  constructor(private readonly stream: NodeJS.WritableStream) {}

  private write(line: string): void {
    this.stream.write(`${line}\n`);
  }

  private flushOutput(): void {
    for (const buffer of Object.values(this.buffers)) {
      const rest = buffer.flush();
      if (rest !== undefined) this.write(`  | ${rest}`);
    }
  }

  taskStarted(info: { taskId: string; description: string; worktree: string; branch: string; steps: number }): void {
    this.total = info.steps;
    this.write(`atlas: task ${info.taskId}: ${info.description}`);
    this.write(`atlas: working tree ${info.worktree} (branch ${info.branch}), ${info.steps} step${info.steps === 1 ? '' : 's'}`);
  }

  stepStarted(info: { index: number; name: string; type: string; attempt: number; maxAttempts: number }): void {
    this.flushOutput();
    this.write(stepHeader(info, this.total));
  }

  output(text: string, stream: 'stdout' | 'stderr'): void {
    for (const line of this.buffers[stream].push(text)) this.write(`  | ${line}`);
  }

  note(text: string): void {
    this.flushOutput();
    this.write(`  · ${text}`);
  }

  stepFinished(info: StepFinishedInfo): void {
    this.flushOutput();
    this.write(stepResult(info, this.total));
  }

  taskFinished(outcome: TaskOutcome): void {
    this.flushOutput();
    this.write(`atlas: ${outcome.message}`);
  }

  close(): void {
    this.flushOutput();
  }
}
