// Keeps hook.json's current_step up to date while a step runs (files touched, last output, what
// it is working on, the agent's session id) without a hook write per output chunk: changes are
// merged in memory and written at most once every `intervalMs`, plus once when the step ends.
import type { Hook } from '../domain/hook.js';
import { addFilesTouched, withLastOutput } from '../domain/step-context.js';
import type { HookManager } from '../hook/manager.js';

const OUTPUT_TAIL = 4000;

export class StepProgress {
  private files: string[] = [];
  private lastOutput: string | undefined;
  private workingOn: string | undefined;
  private sessionId: string | undefined;
  private dirty = false;
  private lastWrite = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly manager: HookManager,
    private readonly stepIndex: number,
    private readonly intervalMs = 2000,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /**
   * `now`: write at once rather than within the interval (e.g. the validation command about to
   * run, which recovery reads to tell what was validating when a crash came).
   */
  setWorkingOn(text: string, options: { now?: boolean } = {}): void {
    const line = text.replace(/\s+/g, ' ').trim().slice(0, 200);
    if (line.length === 0 || line === this.workingOn) return;
    this.workingOn = line;
    if (options.now) {
      this.dirty = true;
      void this.flush();
    } else {
      this.changed();
    }
  }

  addFiles(paths: readonly string[]): void {
    if (paths.length === 0) return;
    this.files.push(...paths);
    this.changed();
  }

  /** Output that accumulates (command output): the tail is kept. */
  appendOutput(text: string): void {
    if (text.length === 0) return;
    this.lastOutput = ((this.lastOutput ?? '') + text).slice(-OUTPUT_TAIL);
    this.changed();
  }

  /** Output that replaces the previous one (the agent's latest message). */
  setOutput(text: string): void {
    if (text.trim().length === 0) return;
    this.lastOutput = text.slice(-OUTPUT_TAIL);
    this.changed();
  }

  setSessionId(id: string): void {
    if (id === this.sessionId) return;
    this.sessionId = id;
    // Written at once: a crash right after must not lose the session a retry would resume.
    this.dirty = true;
    void this.flush();
  }

  get currentWork(): string | undefined {
    return this.workingOn;
  }

  get agentSessionId(): string | undefined {
    return this.sessionId;
  }

  private changed(): void {
    this.dirty = true;
    if (this.timer || this.stopped) return;
    const wait = Math.max(0, this.lastWrite + this.intervalMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
    this.timer.unref();
  }

  /** Writes pending changes (serialised: one write at a time, in order). */
  flush(): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.dirty) return;
      this.dirty = false;
      this.lastWrite = Date.now();
      const files = this.files.splice(0);
      const lastOutput = this.lastOutput;
      const workingOn = this.workingOn;
      const sessionId = this.sessionId;
      try {
        await this.manager.update((hook): Hook => {
          let step = hook.current_step;
          if (!step || step.step_index !== this.stepIndex) return hook;
          if (files.length > 0) step = addFilesTouched(step, files);
          if (lastOutput !== undefined) step = withLastOutput(step, lastOutput);
          if (workingOn !== undefined) step = { ...step, working_on: workingOn };
          if (sessionId !== undefined) step = { ...step, agent_session_id: sessionId };
          return { ...hook, current_step: step, updated_at: this.manager.timestamp() };
        });
      } catch (error) {
        this.onError(error);
      }
    });
    return this.writing;
  }

  /** Final write; no timed writes after this. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
