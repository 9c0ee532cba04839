// Live progress on a terminal: the agent's or command's output scrolls above a status line that
// shows the spinner, step i/n, its name and attempt, the elapsed time and the latest output line.
import { formatDuration } from '../../domain/duration.js';
import type { Reporter, StepFinishedInfo, TaskOutcome } from '../../engine/contract.js';
import { stepHeader, stepResult } from './format.js';
import { LineBuffer } from './line-buffer.js';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const TICK_MS = 100;
// eslint-disable-next-line no-control-regex
const CONTROL = /\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]/g;

/** Whole seconds while it ticks: steadier to read than milliseconds. */
function elapsed(ms: number): string {
  return ms < 60_000 ? `${Math.floor(ms / 1000)}s` : formatDuration(ms);
}

interface Styles {
  dim(text: string): string;
  green(text: string): string;
  red(text: string): string;
  bold(text: string): string;
}

function styles(enabled: boolean): Styles {
  const wrap = (open: number, close: number) => (text: string) => (enabled ? `\x1b[${open}m${text}\x1b[${close}m` : text);
  return { dim: wrap(2, 22), green: wrap(32, 39), red: wrap(31, 39), bold: wrap(1, 22) };
}

export class TtyReporter implements Reporter {
  private total = 0;
  private step: { index: number; name: string; attempt: number; maxAttempts: number; started: number } | undefined;
  private latest = '';
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;
  private drawn = false;
  private readonly buffers = { stdout: new LineBuffer(), stderr: new LineBuffer() };
  private readonly s: Styles;

  constructor(private readonly stream: NodeJS.WriteStream) {
    this.s = styles(!process.env['NO_COLOR']);
  }

  private clearStatus(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }

  /** The status line as its bold head and dim tail, fitted to the terminal width. */
  private statusLine(): { head: string; tail: string } {
    if (!this.step) return { head: '', tail: '' };
    const { index, name, attempt, maxAttempts, started } = this.step;
    const width = Math.max(20, (this.stream.columns || 80) - 1);
    let head = `${SPINNER[this.frame % SPINNER.length]} [${index + 1}/${this.total}] ${name}`;
    const info = [...(maxAttempts > 1 || attempt > 1 ? [`attempt ${attempt}/${maxAttempts}`] : []), elapsed(Date.now() - started)];
    if (head.length > width) head = head.slice(0, width);
    let tail = ` · ${info.join(' · ')}`;
    const latest = this.latest.replace(CONTROL, '').trim();
    const room = width - head.length - tail.length - 3;
    if (latest && room > 10) tail += ` · ${latest.length > room ? `${latest.slice(0, room - 1)}…` : latest}`;
    return { head, tail: tail.slice(0, Math.max(0, width - head.length)) };
  }

  private drawStatus(): void {
    if (!this.step) return;
    const { head, tail } = this.statusLine();
    this.stream.write(`\r\x1b[2K${this.s.bold(head)}${this.s.dim(tail)}`);
    this.drawn = true;
  }

  /** Prints lines above the status line, then redraws it. */
  private print(lines: string[]): void {
    if (lines.length === 0) return;
    this.clearStatus();
    this.stream.write(`${lines.join('\n')}\n`);
    this.drawStatus();
  }

  private startTicking(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.frame++;
      this.drawStatus();
    }, TICK_MS);
    this.timer.unref();
  }

  private stopTicking(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private flushOutput(): string[] {
    const lines: string[] = [];
    for (const buffer of Object.values(this.buffers)) {
      const rest = buffer.flush();
      if (rest !== undefined) lines.push(`  ${rest}`);
    }
    return lines;
  }

  taskStarted(info: { taskId: string; description: string; worktree: string; branch: string; steps: number }): void {
    this.total = info.steps;
    this.print([
      `${this.s.bold(`atlas ${info.taskId}`)}: ${info.description}`,
      this.s.dim(`  ${info.worktree} (branch ${info.branch}), ${info.steps} step${info.steps === 1 ? '' : 's'}`),
    ]);
  }

  stepStarted(info: { index: number; name: string; type: string; attempt: number; maxAttempts: number }): void {
    this.print([...this.flushOutput(), this.s.bold(stepHeader(info, this.total))]);
    this.step = { index: info.index, name: info.name, attempt: info.attempt, maxAttempts: info.maxAttempts, started: Date.now() };
    this.latest = '';
    this.drawStatus();
    this.startTicking();
  }

  output(text: string, stream: 'stdout' | 'stderr'): void {
    const buffer = this.buffers[stream];
    const lines = buffer.push(text);
    const last = buffer.pending || lines.filter((l) => l.trim().length > 0).pop();
    if (last) this.latest = last;
    if (lines.length > 0) this.print(lines.map((l) => `  ${l}`));
    else this.drawStatus();
  }

  note(text: string): void {
    this.print([...this.flushOutput(), this.s.dim(`  · ${text}`)]);
  }

  stepFinished(info: StepFinishedInfo): void {
    this.stopTicking();
    const line = stepResult(info, this.total);
    const flushed = this.flushOutput();
    this.step = undefined;
    this.print([...flushed, info.ok ? this.s.green(line) : info.waiting ? this.s.bold(line) : this.s.red(line)]);
  }

  taskFinished(outcome: TaskOutcome): void {
    this.stopTicking();
    this.step = undefined;
    const text = `atlas: ${outcome.message}`;
    this.print([
      ...this.flushOutput(),
      outcome.state === 'completed' ? this.s.green(text) : outcome.exitCode === 1 ? this.s.red(text) : this.s.bold(text),
    ]);
  }

  close(): void {
    this.stopTicking();
    const flushed = this.flushOutput();
    this.clearStatus();
    if (flushed.length > 0) this.stream.write(`${flushed.join('\n')}\n`);
  }
}
