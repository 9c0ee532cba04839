import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfig, loadConfig } from '../src/config/load.js';
import { tempDir } from './helpers/core-fixtures.js';

function setup(home: string, repo: string, homeYaml?: string, repoYaml?: string) {
  if (homeYaml !== undefined) writeFileSync(join(home, 'config.yaml'), homeYaml);
  if (repoYaml !== undefined) {
    mkdirSync(join(repo, '.atlas'), { recursive: true });
    writeFileSync(join(repo, '.atlas', 'config.yaml'), repoYaml);
  }
}

describe('configuration', () => {
  it("has seed 003's hooks defaults", () => {
    const c = defaultConfig();
    expect(c.hooks.max_checkpoints).toBe(50);
    expect(c.hooks.checkpoint_interval).toBe(5 * 60_000);
    expect(c.hooks.stale_threshold).toBe(5 * 60_000);
    expect(c.hooks.key_derivation).toEqual({ purpose: 44, coin_type: 236, account: 0 });
    expect(c.hooks.retention).toEqual({ completed: 720 * 3_600_000, failed: 168 * 3_600_000, abandoned: 168 * 3_600_000 });
  });

  it("reads the seed's config example", async () => {
    const home = tempDir();
    setup(
      home,
      home,
      [
        'hooks:',
        '  max_checkpoints: 20',
        '  checkpoint_interval: 10m',
        '  stale_threshold: 2m',
        '  key_derivation:',
        '    purpose: 44',
        '    coin_type: 236',
        '    account: 7',
        '  retention:',
        '    completed: 48h',
        '    failed: 24h',
        '    abandoned: 1h30m',
      ].join('\n'),
    );
    const { config, warnings } = await loadConfig({ home, env: {} });
    expect(warnings).toEqual([]);
    expect(config.hooks.max_checkpoints).toBe(20);
    expect(config.hooks.checkpoint_interval).toBe(600_000);
    expect(config.hooks.key_derivation.account).toBe(7);
    expect(config.hooks.retention.abandoned).toBe(90 * 60_000);
  });

  it('applies flags > env > repo > home > defaults', async () => {
    const home = tempDir();
    const repo = tempDir();
    setup(
      home,
      repo,
      'hooks:\n  max_checkpoints: 10\n  stale_threshold: 1m\nai:\n  model: home-model\n',
      'hooks:\n  max_checkpoints: 20\nai:\n  model: repo-model\n',
    );
    const env = { ATLAS_AI_MODEL: 'env-model' };
    const { config, sources } = await loadConfig({ home, repoRoot: repo, env, overrides: { 'hooks.stale_threshold': '30s' } });
    expect(config.hooks.max_checkpoints).toBe(20);
    expect(sources['hooks.max_checkpoints']).toBe(join(repo, '.atlas', 'config.yaml'));
    expect(config.ai.model).toBe('env-model');
    expect(sources['ai.model']).toBe('environment');
    expect(config.hooks.stale_threshold).toBe(30_000);
    expect(sources['hooks.stale_threshold']).toBe('command line');
    expect(config.hooks.checkpoint_interval).toBe(300_000);
    expect(sources['hooks.checkpoint_interval']).toBe('default');
  });

  it('an invalid value falls back with a warning that names the key', async () => {
    const home = tempDir();
    setup(home, home, 'hooks:\n  max_checkpoints: lots\n  stale_threshold: soon\nai:\n  agent: gpt\n');
    const { config, warnings } = await loadConfig({ home, env: { ATLAS_HOOKS_CHECKPOINT_INTERVAL: '-5' } });
    expect(config.hooks.max_checkpoints).toBe(50);
    expect(config.hooks.stale_threshold).toBe(300_000);
    expect(config.ai.agent).toBe('claude');
    expect(config.hooks.checkpoint_interval).toBe(300_000);
    expect(warnings.join('\n')).toMatch(/invalid hooks\.max_checkpoints: expected a whole number, got "lots"/);
    expect(warnings.join('\n')).toMatch(/invalid hooks\.stale_threshold/);
    expect(warnings.join('\n')).toMatch(/invalid ai\.agent: expected one of claude, command/);
    expect(warnings.join('\n')).toMatch(/environment ATLAS_HOOKS_CHECKPOINT_INTERVAL: invalid hooks\.checkpoint_interval/);
  });

  it('an invalid higher layer falls back to the next valid layer, not straight to the default', async () => {
    const home = tempDir();
    setup(home, home, 'hooks:\n  max_checkpoints: 12\n');
    const { config } = await loadConfig({ home, env: { ATLAS_HOOKS_MAX_CHECKPOINTS: 'many' } });
    expect(config.hooks.max_checkpoints).toBe(12);
  });

  it('warns about unknown keys and refuses unknown override keys', async () => {
    const home = tempDir();
    setup(home, home, 'hooks:\n  max_checkpionts: 5\n');
    const { warnings } = await loadConfig({ home, env: {} });
    expect(warnings).toEqual([`${join(home, 'config.yaml')}: unknown key "hooks.max_checkpionts" ignored`]);
    await expect(loadConfig({ home, env: {}, overrides: { 'hooks.nope': '1' } })).rejects.toThrow(/unknown configuration key "hooks.nope"/);
  });

  it('a YAML syntax error is an error naming the file, not a silent default', async () => {
    const home = tempDir();
    setup(home, home, 'hooks:\n  max_checkpoints: [1,\n');
    await expect(loadConfig({ home, env: {} })).rejects.toThrow(/config\.yaml is not valid YAML/);
  });

  it('notices an edited file even though parsed YAML is cached', async () => {
    const home = tempDir();
    setup(home, home, 'hooks:\n  max_checkpoints: 11\n');
    expect((await loadConfig({ home, env: {} })).config.hooks.max_checkpoints).toBe(11);
    setup(home, home, 'hooks:\n  max_checkpoints: 12\n');
    const later = new Date(Date.now() + 5000);
    utimesSync(join(home, 'config.yaml'), later, later);
    expect((await loadConfig({ home, env: {} })).config.hooks.max_checkpoints).toBe(12);
  });
});
