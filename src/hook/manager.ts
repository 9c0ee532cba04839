// The hook manager: every change to a task's hook goes through here, as one locked
// read-modify-write that rewrites hook.json atomically and re-renders HOOK.md beside it.

import type { ConversationView } from '../conversation/hook-view.js';
import { conversationView } from '../conversation/hook-view.js';
import type { StepCheckpoint } from '../domain/checkpoint.js';
import type { Hook, TransitionInput } from '../domain/hook.js';
import { addCheckpoint, recordEvent, transition } from '../domain/hook.js';
import type { Task } from '../domain/task.js';
import { toTimestamp } from '../domain/time.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { assertHookOfTask, readHookFile, writeHookFile } from '../store/hook-file.js';
import { withLock } from '../store/lock.js';
import { taskFiles } from '../store/paths.js';
import type { TaskRef } from '../store/task-store.js';
import { readTask, updateTask } from '../store/task-store.js';
import { renderHookMarkdown } from './markdown.js';

/** Verification status of each receipt, for HOOK.md (supplied by the crypto layer). */
export type ReceiptStatusFn = (hook: Hook, task: Task | undefined) => Promise<string[] | undefined>;

export interface HookManagerOptions {
  maxCheckpoints: number;
  now?: () => Date;
  receiptStatuses?: ReceiptStatusFn;
}

export class HookManager {
  private task: Task | undefined;
  readonly files: ReturnType<typeof taskFiles>;

  constructor(
    readonly ref: TaskRef,
    private readonly options: HookManagerOptions,
  ) {
    this.files = taskFiles(ref.dir);
  }

  now(): Date {
    return this.options.now?.() ?? new Date();
  }

  timestamp(): string {
    return toTimestamp(this.now());
  }

  get maxCheckpoints(): number {
    return this.options.maxCheckpoints;
  }

  /** hook.json, refused (exit 2) when it is not this task's: checked before anything acts on it. */
  read(): Hook {
    const hook = readHookFile(this.files.hook);
    assertHookOfTask(this.files.hook, hook, this.ref.id, this.readTask()?.steps);
    return hook;
  }

  /** task.json (static for a task's life, so read once). */
  readTask(): Task | undefined {
    if (!this.task) {
      try {
        this.task = readTask(this.ref.dir);
      } catch {
        return undefined;
      }
    }
    return this.task;
  }

  private async persist(hook: Hook): Promise<void> {
    writeHookFile(this.files.hook, hook);
    await this.writeMarkdown(hook);
    await this.mirrorState(hook);
  }

  /**
   * Keeps task.json's `status` equal to the hook's state, so listings and task resolution need
   * not parse every hook.json. Lock order is always hook.json, then task.json.
   */
  private async mirrorState(hook: Hook): Promise<void> {
    const task = this.readTask();
    if (!task || task.status === hook.state) return;
    this.task = await updateTask(this.ref.dir, (current) => ({ ...current, status: hook.state, updated_at: hook.updated_at }));
  }

  private async writeMarkdown(hook: Hook): Promise<void> {
    const task = this.readTask();
    let receiptStatuses: string[] | undefined;
    try {
      receiptStatuses = hook.receipts.length > 0 ? await this.options.receiptStatuses?.(hook, task) : undefined;
    } catch {
      receiptStatuses = undefined;
    }
    let conversations: ConversationView | undefined;
    try {
      conversations = conversationView(this.ref.dir, hook, task);
    } catch {
      conversations = undefined;
    }
    const markdown = renderHookMarkdown({
      hook,
      task,
      now: this.now(),
      receiptStatuses,
      maxCheckpoints: this.maxCheckpoints,
      ...(conversations ? { conversations } : {}),
    });
    writeFileAtomic(this.files.hookMarkdown, markdown, { durable: false });
  }

  /** Writes a brand-new hook (the task directory was just claimed, so no one else can see it). */
  async create(hook: Hook): Promise<Hook> {
    await withLock(this.files.hook, () => this.persist(hook));
    return hook;
  }

  /** One locked read-modify-write. `mutate` may throw to abort without writing. */
  async update(mutate: (hook: Hook) => Hook | Promise<Hook>): Promise<Hook> {
    return withLock(this.files.hook, async () => {
      const next = await mutate(this.read());
      await this.persist(next);
      return next;
    });
  }

  async transition(input: Omit<TransitionInput, 'at'>, change?: (hook: Hook) => Hook): Promise<Hook> {
    return this.update((hook) => {
      const moved = transition(hook, { ...input, at: this.timestamp() });
      return change ? change(moved) : moved;
    });
  }

  async event(input: Omit<TransitionInput, 'at' | 'to'>, change?: (hook: Hook) => Hook): Promise<Hook> {
    return this.update((hook) => {
      const next = recordEvent(hook, { ...input, at: this.timestamp() });
      return change ? change(next) : next;
    });
  }

  async addCheckpoint(checkpoint: StepCheckpoint): Promise<Hook> {
    return this.update((hook) => addCheckpoint(hook, checkpoint, this.maxCheckpoints));
  }

  async regenerate(): Promise<Hook> {
    return withLock(this.files.hook, async () => {
      const hook = this.read();
      await this.writeMarkdown(hook);
      return hook;
    });
  }
}
