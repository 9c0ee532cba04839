// Ctrl+C and SIGTERM while a task runs: the first stops the step's processes and lets the runner
// park the hook in awaiting_human; a second one forces an immediate exit.
import type { ProcessGroups } from './processes.js';

const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export class InterruptWatch {
  private received: NodeJS.Signals | undefined;
  private readonly waiters: ((signal: NodeJS.Signals) => void)[] = [];
  private readonly handler = (signal: NodeJS.Signals) => this.onSignal(signal);

  constructor(
    private readonly groups: ProcessGroups,
    private readonly hooks: { first(signal: NodeJS.Signals): void; force(signal: NodeJS.Signals): void },
  ) {}

  install(): this {
    for (const s of SIGNALS) process.on(s, this.handler);
    return this;
  }

  uninstall(): void {
    for (const s of SIGNALS) process.off(s, this.handler);
  }

  /** The signal that interrupted the run, if one did. */
  get signal(): NodeJS.Signals | undefined {
    return this.received;
  }

  /** Marks the run interrupted without a signal (e.g. Ctrl+C inside a prompt, which reads raw keys). */
  interrupt(signal: NodeJS.Signals = 'SIGINT'): void {
    this.onSignal(signal);
  }

  /** Resolves when the run is interrupted. */
  wait(): Promise<NodeJS.Signals> {
    if (this.received) return Promise.resolve(this.received);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private onSignal(signal: NodeJS.Signals): void {
    if (this.received) {
      this.groups.killAll();
      this.hooks.force(signal);
      return;
    }
    this.received = signal;
    this.groups.terminateAll();
    this.hooks.first(signal);
    for (const w of this.waiters.splice(0)) w(signal);
  }
}
