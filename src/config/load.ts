// Effective configuration: flags > env ATLAS_* > repo .atlas/config.yaml > $ATLAS_HOME/config.yaml
// > defaults. A bad value falls back to the next layer (ultimately the default) with a warning
// that names the key and where it came from.
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { PRIVATE_DIR_MODE, writeFileAtomic } from '../store/atomic-write.js';
import { homePaths } from '../store/paths.js';
import { formatSetting } from './format.js';
import type { Config, Leaf } from './schema.js';
import { coerce, LEAF_BY_KEY, LEAVES } from './schema.js';
import type { ParsedYaml } from './yaml-lib.js';
import { parseYamlText } from './yaml-lib.js';

export interface LoadConfigOptions {
  home: string;
  /** Repository root whose .atlas/config.yaml applies, if any. */
  repoRoot?: string;
  env?: NodeJS.ProcessEnv;
  /** key → raw value, from command-line flags (highest precedence). */
  overrides?: Record<string, string>;
}

export interface LoadedConfig {
  config: Config;
  warnings: string[];
  /** Which layer each key's value came from. */
  sources: Record<string, string>;
}

type Layer = { name: string; values: Map<string, unknown> };

function flatten(value: unknown, prefix: string, out: Map<string, unknown>, unknown: string[]): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
  for (const [k, v] of Object.entries(value)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (LEAF_BY_KEY.has(key)) out.set(key, v);
    else if (typeof v === 'object' && v !== null && !Array.isArray(v)) flatten(v, key, out, unknown);
    else unknown.push(key);
  }
}

/** A short stable name for a path (not a security hash: node:crypto costs startup time). */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/** Parsed YAML of one file, cached as JSON by (path, size, mtime) so YAML is parsed only on change. */
async function readYamlFile(path: string, cacheDir: string): Promise<ParsedYaml> {
  const stat = statSync(path);
  const cachePath = join(cacheDir, `config-${fnv1a(path)}.json`);
  // The path is part of the stamp, so two paths sharing a cache name never share a cache.
  const stamp = `${path}:${stat.size}:${stat.mtimeMs}`;
  try {
    const cached = JSON.parse(readFileSync(cachePath, 'utf8')) as { stamp: string; data: unknown; warnings?: unknown };
    if (cached.stamp === stamp && Array.isArray(cached.warnings)) return { data: cached.data, warnings: cached.warnings.map(String) };
  } catch {
    // No cache yet, or unreadable: parse the file.
  }
  let parsed: ParsedYaml;
  try {
    parsed = await parseYamlText(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new AtlasError(`${path} is not valid YAML: ${(error as Error).message}`, {
      exitCode: EXIT.input,
      hint: 'fix the syntax at the line shown (docs/configuration.md lists every key)',
      cause: error,
    });
  }
  try {
    mkdirSync(cacheDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    writeFileAtomic(cachePath, JSON.stringify({ stamp, data: parsed.data ?? null, warnings: parsed.warnings }));
  } catch {
    // A read-only ATLAS_HOME only costs speed.
  }
  return parsed;
}

function kindOf(value: unknown): string {
  return Array.isArray(value) ? 'a list' : typeof value === 'string' ? 'text' : typeof value;
}

async function fileLayer(path: string, cacheDir: string, warnings: string[]): Promise<Layer | undefined> {
  if (!existsSync(path)) return undefined;
  const { data, warnings: yamlWarnings } = await readYamlFile(path, cacheDir);
  for (const w of yamlWarnings) warnings.push(`${path}: ${w}`);
  const values = new Map<string, unknown>();
  if (data !== null && data !== undefined && (typeof data !== 'object' || Array.isArray(data))) {
    warnings.push(
      `${path}: expected settings by key (like "hooks:" with keys under it), got ${kindOf(data)}; the file is ignored, so every key keeps its default (or the value from another layer)`,
    );
    return { name: path, values };
  }
  const unknownKeys: string[] = [];
  flatten(data, '', values, unknownKeys);
  for (const key of unknownKeys) warnings.push(`${path}: unknown key "${key}" ignored`);
  return { name: path, values };
}

function envLayer(env: NodeJS.ProcessEnv): Layer {
  const values = new Map<string, unknown>();
  for (const l of LEAVES) {
    const v = env[l.env];
    if (v !== undefined && v !== '') values.set(l.key, v);
  }
  return { name: 'environment', values };
}

function setPath(target: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]!] = value;
}

function resolveLeaf(leaf: Leaf, layers: Layer[], warnings: string[]): { value: unknown; source: string } {
  const invalid: string[] = [];
  let found: { value: unknown; source: string } | undefined;
  for (const layer of layers) {
    if (!layer.values.has(leaf.key)) continue;
    const result = coerce(leaf, layer.values.get(leaf.key));
    if (result.ok) {
      found = { value: result.value, source: layer.name };
      break;
    }
    const where = layer.name === 'environment' ? `environment ${leaf.env}` : layer.name;
    invalid.push(`${where}: invalid ${leaf.key}: ${result.problem}`);
  }
  found ??= { value: leaf.default, source: 'default' };
  // Each bad value is named with the value used instead, so nobody wonders what atlas runs with.
  const used = `using ${formatSetting(leaf, found.value)} (${found.source === 'default' ? 'the default' : `from ${found.source}`})`;
  for (const text of invalid) warnings.push(`${text}; ${used}`);
  return found;
}

export async function loadConfig(options: LoadConfigOptions): Promise<LoadedConfig> {
  const warnings: string[] = [];
  const paths = homePaths(options.home);
  const layers: Layer[] = [];
  if (options.overrides) {
    const values = new Map<string, unknown>();
    for (const [key, raw] of Object.entries(options.overrides)) {
      if (!LEAF_BY_KEY.has(key)) {
        throw new AtlasError(`unknown configuration key "${key}"`, {
          exitCode: EXIT.input,
          hint: 'run `atlas config list` to see every key',
        });
      }
      values.set(key, raw);
    }
    layers.push({ name: 'command line', values });
  }
  layers.push(envLayer(options.env ?? process.env));
  if (options.repoRoot) {
    const repoLayer = await fileLayer(join(options.repoRoot, '.atlas', 'config.yaml'), paths.cacheDir, warnings);
    if (repoLayer) layers.push(repoLayer);
  }
  const homeLayer = await fileLayer(paths.config, paths.cacheDir, warnings);
  if (homeLayer) layers.push(homeLayer);

  const config: Record<string, unknown> = {};
  const sources: Record<string, string> = {};
  for (const l of LEAVES) {
    const { value, source } = resolveLeaf(l, layers, warnings);
    setPath(config, l.key, value);
    sources[l.key] = source;
  }
  return { config: config as unknown as Config, warnings, sources };
}

/** Defaults only: for code paths (and tests) that run without any files. */
export function defaultConfig(): Config {
  const config: Record<string, unknown> = {};
  for (const l of LEAVES) setPath(config, l.key, structuredClone(l.default));
  return config as unknown as Config;
}
