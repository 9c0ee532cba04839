// What every command receives: where it runs, ATLAS_HOME, output mode, configuration on demand.
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import { locateWorktree } from '../git/locate.js';
import type { HookManager, ReceiptStatusFn } from '../hook/manager.js';
import { atlasHome } from '../store/paths.js';
import type { TaskRef } from '../store/task-store.js';
import type { Output } from './output.js';
import { createOutput } from './output.js';

export interface GlobalFlags {
  json?: boolean;
  config?: string[];
  /** Show every lifecycle hook run (docs/lifecycle-hooks.md). */
  verbose?: boolean;
}

export class CliContext {
  readonly cwd = process.cwd();
  readonly home = atlasHome();
  readonly out: Output;
  private loaded: Config | undefined;

  constructor(readonly flags: GlobalFlags) {
    this.out = createOutput(Boolean(flags.json));
  }

  /** `-c key=value` flags as config overrides. */
  overrides(extra: Record<string, string | undefined> = {}): Record<string, string> {
    const result: Record<string, string> = {};
    for (const item of this.flags.config ?? []) {
      const eq = item.indexOf('=');
      if (eq <= 0) {
        throw new AtlasError(`-c expects key=value, got "${item}"`, {
          exitCode: EXIT.input,
          hint: 'for example: -c hooks.stale_threshold=10m',
        });
      }
      result[item.slice(0, eq).trim()] = item.slice(eq + 1);
    }
    for (const [k, v] of Object.entries(extra)) if (v !== undefined) result[k] = v;
    return result;
  }

  /** Effective configuration for a repository (default: the one around cwd); warnings go to stderr. */
  async config(repoRoot?: string, extra: Record<string, string | undefined> = {}): Promise<Config> {
    if (this.loaded && repoRoot === undefined && Object.keys(extra).length === 0) return this.loaded;
    const root = repoRoot ?? locateWorktree(this.cwd)?.root;
    // Loaded on demand: commands that need no configuration don't pay for it.
    const { loadConfig } = await import('../config/load.js');
    const { config, warnings } = await loadConfig({
      home: this.home,
      ...(root ? { repoRoot: root } : {}),
      overrides: this.overrides(extra),
    });
    for (const w of warnings) this.out.warn(w);
    if (repoRoot === undefined && Object.keys(extra).length === 0) this.loaded = config;
    return config;
  }

  async hookManager(ref: TaskRef, repoRoot?: string): Promise<HookManager> {
    const config = await this.config(repoRoot);
    const { HookManager } = await import('../hook/manager.js');
    return new HookManager(ref, {
      maxCheckpoints: config.hooks.max_checkpoints,
      receiptStatuses: await this.receiptStatuses(config),
    });
  }

  /**
   * HOOK.md's receipt column, verified for real against the local account xpub and artifacts.
   * The verifier loads on first use, so writes to hooks without receipts never pay for it.
   */
  async receiptStatuses(config: Config): Promise<ReceiptStatusFn> {
    const home = this.home;
    let statuses: ReceiptStatusFn | undefined;
    return async (hook, task) => {
      statuses ??= (await import('../receipts/status.js')).createReceiptStatuses(home, config.hooks.key_derivation);
      return statuses(hook, task);
    };
  }

  /**
   * Makes sure the signing key exists (the first run creates it) and tells the person when
   * something was created; `print` is stdout for `atlas init`, stderr for commands that run tasks.
   */
  async ensureSigningKey(config: Config, print: (line: string) => void): Promise<void> {
    const { ensureMasterKey, masterKeySummary } = await import('../crypto/key-manager.js');
    const info = await ensureMasterKey(this.home, config);
    for (const line of masterKeySummary(info)) print(line);
  }
}
